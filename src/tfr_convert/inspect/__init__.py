"""tfr-inspect: what is inside TFRecord files, read without TensorFlow.

One module per mode, imported only when that mode runs (numpy and Pillow cost
start-up time a quick --count should not pay): summary (the default report and
--count), verify, stats, grid, index, diff; paths resolves what PATH arguments name.
"""
