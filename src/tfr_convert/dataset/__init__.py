"""What a dataset is, apart from how it is written: file names (naming.py), feature
specs and the tf.train.Example codec, a committed dataset read back (existing.py,
loader.py), its splits, and the encodings and measures shared by sources, exports and
the inspector (COCO RLE, image formats, near-duplicates, order quality)."""
