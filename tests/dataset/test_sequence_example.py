"""dataset/sequence_example.py: the bytes protobuf's deterministic serialization gives."""

from __future__ import annotations

import pytest

from tfr_convert.dataset.wire.sequence_example import serialize_sequence


@pytest.mark.parametrize(
    ("context", "lists"),
    [
        ({"clip/label/index": 3, "clip/data_path": "a/b.mkv", "rate": 2.5}, {"image/encoded": [b"x" * 300, b"yy"]}),
        ({}, {"b": [[1, -2], [3]], "a": [[0.5]], "image": [b"z"], "image_raw": [b""]}),
        ({"only": b"context"}, {}),
        ({"k": [1, 2]}, {"empty": []}),
    ],
)
def test_a_sequence_example_is_the_bytes_protobuf_writes(context, lists):
    tf = pytest.importorskip("tensorflow")

    def feature(value):
        values = value if isinstance(value, list) else [value]
        if all(isinstance(v, bytes | str) for v in values):
            return tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[v.encode() if isinstance(v, str) else v for v in values])
            )
        if all(isinstance(v, int) for v in values):
            return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))

    expected = tf.train.SequenceExample(context=tf.train.Features(feature={k: feature(v) for k, v in context.items()}))
    if lists:  # (no feature lists: the field left out, as protobuf leaves an unset message)
        expected.feature_lists.CopyFrom(
            tf.train.FeatureLists(
                feature_list={
                    k: tf.train.FeatureList(feature=[feature(s) for s in steps]) for k, steps in lists.items()
                }
            )
        )
    data = serialize_sequence(context, lists)
    assert tf.train.SequenceExample.FromString(data) == expected
    assert data == expected.SerializeToString(deterministic=True)
