"""What folder sources share: listing files under a root (folders.py), class sub-folders
(class_folders.py), a labels CSV (label_csv.py, csvtable.py) and keeping near-copies in
one split (grouping.py).
"""
