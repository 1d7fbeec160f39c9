"""A plugin whose import takes half a minute: `tfr-convert --help` must not wait for it."""

import time

time.sleep(30)
command = None
