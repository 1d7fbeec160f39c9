"""Sound and video: `tfr-convert audio` (audio.py, wav_header.py) and `video` (video.py),
over folders of recordings or clips (folders.py).
"""
