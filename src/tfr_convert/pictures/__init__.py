"""Pictures as a feature that owns its encoding: the policy that checks, keeps or re-encodes,
resizes and colours a picture (imaging.py, stored_image.py), the structural checks of PNG
and JPEG files (png_check.py, jpeg_check.py) and the PNG encoder of whole stacks (png.py);
used by every source that stores pictures and by the commands' options.
"""
