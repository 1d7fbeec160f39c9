"""tfr-export: records back out of TFRecord / ArrayRecord files and datasets.

    source.py   what is exported: splits of records, read like tfr-inspect reads them,
                the schema (inferred from the records) and what metadata says of it
    parquet.py  --to parquet: a file per split, one row per record, row groups of bounded size
    images.py   --to images: pictures to files, in class folders or beside one labels.csv
    media.py    --to audio|video: recordings (WAV, or the file kept) and clips (FFV1) the same way
    boxes.py    --to coco|yolo|voc|csv: a detection dataset's pictures and boxes, as
                `tfr-convert detection` reads them
    webdataset.py  --to webdataset: tar shards of samples (picture, .cls, .json) and their wids index
    hf.py       --to hf: a Hugging Face save_to_disk folder (Arrow files, the features as
                `datasets` writes them: hf_features.py)
    staging.py  files written aside and moved into place once all are written

It reads as inspect/ does and imports no converter and no writer of shards.
"""

BOX_FORMATS = ("coco", "yolo", "voc", "csv")  # boxes.py's
MEDIA = ("audio", "video")  # media.py's
TARGETS = ("parquet", "images", *MEDIA, *BOX_FORMATS, "webdataset", "hf")
