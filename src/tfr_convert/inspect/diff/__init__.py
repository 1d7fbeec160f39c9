"""tfr-inspect OLD NEW --diff: which records two datasets hold differently (two versions, two conversions, a
folder against a bucket), matched by a key feature, and which features changed.

Each side's shards are grouped by split: a dataset directory's from its metadata, other
files by their shard names (a file of no shard name is in split ""). A shard whose sha256
both manifests list alike, in the same split, holds the same records on both sides: it
is not read at all. Every other record is read once, on every core, and its payload
hashed. Within each split, records of equal hashes are unchanged (as many as both sides
hold); only the records left over are read again, by their offsets, for their key
feature (a key is in the payload, so equal payloads have equal keys: a diff of two
similar datasets reads few keys). Those are matched by key (a key found twice on a side
in order of appearance): a match is a changed record, the rest added or removed. The
first DETAILED changed records of each split are decoded on both sides to name the
features that differ. A key removed from one split and added to another moved. Without
a key feature (`KEYS`, or --key), records are matched by content alone: a change is then
one removal and one addition.

Memory: the old side's hashes in a table, about 100 bytes a record, the rest 24 bytes a
record; objects only for the records left over.
"""
