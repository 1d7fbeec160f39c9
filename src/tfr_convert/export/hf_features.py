"""What each feature becomes in a Hugging Face dataset: its `datasets` feature (as
`dataset_info.json` writes it), its Arrow type, and a record's value as its cell.

From the dataset's features.json, nesting kept: a FeaturesDict is a dict (an Arrow
struct); a Sequence of a dict is a dict of lists, as `datasets` stores one; ClassLabel
keeps its names; Image is an `Image` ({bytes: the stored picture, path: None}); raw
pixels an `Image` of their PNG; Audio an `Audio` of the file's bytes (samples: a WAV,
as --to audio writes it); Video a list of `Image` frames; a tensor a `Value` of its
dtype, a `List` per unknown dimension, a fixed-length `List` per known one; a string
tensor `string` where it is text, else `binary`. Files with no metadata get the kinds
the records hold, one column each.

A dataset `tfr-convert table` made of a `save_to_disk` folder carries that folder's
features (huggingface_features.json): a column whose carried feature `carried_type`
knows gets it back, its cells cast from what the records hold (int32 stays int32).
"""

from __future__ import annotations

import dataclasses
import io
import sys
from dataclasses import dataclass, field
from typing import Any

from ..dataset.features import FeatureSpec
from ..errors import SourceError

_BLOB = ("bytes", "path")  # an Image's or Audio's struct
_INT, _FLOAT = "int64", "float32"


@dataclass(frozen=True)
class Leaf:
    """One record key as one cell."""

    key: str
    kind: str  # value, image, raw_image, audio, frames
    dtype: str = _INT  # a value's `datasets` dtype
    dims: tuple[int | None, ...] = ()  # the value's shape (a leading None: any length)
    optional: bool = False  # a record may lack it: a null
    names: tuple[str, ...] | None = None  # a ClassLabel's


@dataclass
class Node:
    """A column, or a field of a struct: a leaf, or a dict of nodes."""

    hf: dict[str, Any]  # the `datasets` feature
    leaf: Leaf | None = None
    fields: dict[str, Node] = field(default_factory=dict)
    carried: Any = None  # the Arrow type of a carried feature, which cells are cast to


def arrow_type(pa: Any, node: Node) -> Any:
    """The Arrow type of the cells `cells` makes for the node."""
    if node.leaf is None:
        return pa.struct([pa.field(name, arrow_type(pa, child)) for name, child in node.fields.items()])
    leaf = node.leaf
    if leaf.kind in ("image", "raw_image", "audio", "frames"):
        blob = pa.struct([pa.field("bytes", pa.binary()), pa.field("path", pa.string())])
        return pa.list_(blob) if leaf.kind == "frames" or leaf.dims[:1] == (None,) else blob
    kind = (
        pa.string()
        if leaf.dtype == "string"
        else pa.binary()
        if leaf.dtype == "binary"
        else pa.type_for_alias(leaf.dtype)
    )
    for size in reversed(leaf.dims):
        kind = pa.list_(kind) if size is None else pa.list_(kind, size)
    return kind


# ---------------------------------------------------------------- the features


def tree(described: dict[str, Any], class_names: dict[str, list[str]], text: set[str]) -> dict[str, Node]:
    """features.json's features as columns."""

    def walk(entries: dict[str, Any], prefix: tuple[str, ...], per_object: bool) -> dict[str, Node]:
        nodes = {}
        for name, description in entries.items():
            if not isinstance(description, dict):
                continue
            inner, sequence = description, per_object
            if "sequence" in inner:
                inner, sequence = (inner["sequence"] or {}).get("feature") or {}, True
            key = "/".join((*prefix, name))
            if "featuresDict" in inner:
                fields = walk((inner["featuresDict"] or {}).get("features") or {}, (*prefix, name), sequence)
                nodes[name] = Node({n: f.hf for n, f in fields.items()}, fields=fields)
            else:
                nodes[name] = _leaf(key, inner, sequence, class_names.get(key), key in text)
        return nodes

    return walk(described, (), False)


def flat_tree(schema: dict[str, FeatureSpec], class_names: dict[str, list[str]], text: set[str]) -> dict[str, Node]:
    """Columns of records with no metadata: a column per feature, of what it holds."""
    nodes = {}
    for key, spec in schema.items():
        dtype = "string" if key in text else "binary" if spec.dtype == "string" else spec.dtype
        leaf = Leaf(key, "value", dtype, spec.shape, spec.per_object, _names(class_names.get(key)))
        nodes[key] = Node(_hf(leaf), leaf)
    return nodes


def _names(names: list[str] | None) -> tuple[str, ...] | None:
    return tuple(names) if names is not None else None


def _leaf(key: str, d: dict[str, Any], per_object: bool, names: list[str] | None, text: bool) -> Node:
    python_class = str(d.get("pythonClassName", ""))
    kind = python_class.rsplit(".", 1)[-1]
    lead = (None,) if per_object else ()
    if kind == "ClassLabel":
        count = _number(key, "numClasses", (d.get("classLabel") or {}).get("numClasses") or 0)
        leaf = Leaf(key, "value", _INT, lead, names=tuple(names) if names else tuple(str(i) for i in range(count)))
    elif kind == "Image":
        leaf = Leaf(key, "image", dims=lead)
    elif kind == "Audio":
        leaf = Leaf(key, "audio", dims=lead)
        rate = _number(key, "sampleRate", (d.get("audio") or {}).get("sampleRate") or 0)
        return Node(_hf(leaf, rate=rate or None), leaf)
    elif kind == "Video":
        leaf = Leaf(key, "frames")
    elif kind == "BBoxFeature":
        leaf = Leaf(key, "value", _FLOAT, (*lead, 4))
    elif kind == "Text":
        leaf = Leaf(key, "value", "string", lead)
    else:
        tensor = d.get("tensor") or {}
        sizes = [_number(key, "a dimension", x) for x in (tensor.get("shape") or {}).get("dimensions") or []]
        dims = tuple(None if x < 0 else x for x in sizes)
        dtype = str(tensor.get("dtype") or _INT)
        if dtype not in _DTYPES:
            raise SourceError(f"feature {key!r}: dtype {dtype!r} is not a tensor's ({', '.join(_DTYPES)})")
        if str(tensor.get("encoding", "")).lower() == "bytes" and len(dims) == 3 and dtype == "uint8":
            leaf = Leaf(key, "raw_image", dims=dims)
        else:
            dtype = ("string" if text else "binary") if dtype == "string" else dtype
            leaf = Leaf(key, "value", dtype, (*lead, *dims))
    return Node(_hf(leaf), leaf)


# the dtypes a TFDS tensor of a record may have, and `datasets` takes as they are named
_DTYPES = ("int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool", "float32", "float64",
           "float16", "string")  # fmt: skip


def _number(key: str, what: str, value: Any) -> int:
    """An integer of a feature's description (written as a number or its text)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        raise SourceError(f"feature {key!r}: {what} {value!r} is not an integer") from None


def _hf(leaf: Leaf, rate: int | None = None) -> dict[str, Any]:
    """The `datasets` feature of a leaf, as dataset_info.json writes it."""
    if leaf.kind in ("image", "raw_image", "frames", "audio"):
        one = {"_type": "Image"} if leaf.kind != "audio" else {"sampling_rate": rate, "_type": "Audio"}
        many = leaf.kind == "frames" or leaf.dims[:1] == (None,)
        return {"feature": one, "_type": "List"} if many else one
    feature = (
        {"names": list(leaf.names), "_type": "ClassLabel"} if leaf.names else {"dtype": leaf.dtype, "_type": "Value"}
    )
    for size in reversed(leaf.dims):
        feature = {"feature": feature, "_type": "List"} | ({"length": size} if size is not None else {})
    return feature


# ---------------------------------------------------------------- carried features


def carried_type(pa: Any, feature: Any) -> Any:
    """The Arrow type `datasets` stores a carried feature as; None for one not known here."""
    if not isinstance(feature, dict):
        return None
    kind = feature.get("_type")
    if kind is None:  # a dict of features
        fields = [(name, carried_type(pa, f)) for name, f in feature.items()]
        return pa.struct(fields) if fields and all(t is not None for _, t in fields) else None
    if kind == "Value":
        try:
            return pa.type_for_alias(str(feature.get("dtype")))
        except (ValueError, KeyError):
            return None
    if kind == "ClassLabel":
        return pa.int64()
    if kind in ("Image", "Audio"):
        return pa.struct([pa.field("bytes", pa.binary()), pa.field("path", pa.string())])
    if kind in ("List", "Sequence", "LargeList"):
        inner, length = feature.get("feature"), feature.get("length", -1)
        if kind == "Sequence" and isinstance(inner, dict) and "_type" not in inner:  # a dict of lists
            return carried_type(pa, {n: {"feature": f, "_type": "List", "length": length} for n, f in inner.items()})
        item = carried_type(pa, inner)
        if item is None or not isinstance(length, int):
            return None
        return pa.list_(item, length) if length >= 0 else pa.list_(item)
    return None


def carry(pa: Any, nodes: dict[str, Node], carried: Any) -> dict[str, Node]:
    """The columns, with a carried feature wherever it stores what ours holds (ints as
    ints, floats as floats, text or bytes as either, lists and dicts alike), in the
    carried order (then the others)."""
    if not isinstance(carried, dict):
        return nodes
    out = {}
    for name, feature in carried.items():
        node, kind = nodes.get(name), carried_type(pa, feature)
        if node is None or kind is None:
            continue
        node = _bytes_as(pa, _ordered_as(node, feature), kind)
        ours = arrow_type(pa, node)
        if _same_kind(pa, ours, kind):
            out[name] = Node(feature, node.leaf, node.fields, None if kind.equals(ours) else kind)
    return out | {name: node for name, node in nodes.items() if name not in out}


def _ordered_as(node: Node, feature: dict[str, Any]) -> Node:
    """A dict node with its fields in the carried feature's order (a struct casts by position)."""
    if node.leaf is not None or "_type" in feature or set(feature) != set(node.fields):
        return node
    fields = {n: _ordered_as(node.fields[n], f) if isinstance(f, dict) else node.fields[n] for n, f in feature.items()}
    return Node({n: f.hf for n, f in fields.items()}, fields=fields)


def _bytes_as(pa: Any, node: Node, kind: Any) -> Node:
    """The node with its string leaves binary where the carried type holds bytes, and
    its binary ones text where it holds text (so no cell is decoded that is not text)."""
    t = pa.types
    if node.leaf is None:
        if not t.is_struct(kind) or [f.name for f in kind] != list(node.fields):
            return node
        fields = {f.name: _bytes_as(pa, node.fields[f.name], f.type) for f in kind}
        return Node(node.hf, fields=fields, carried=node.carried)
    while t.is_list(kind) or t.is_fixed_size_list(kind):
        kind = kind.value_type
    if node.leaf.dtype in ("string", "binary") and (t.is_binary(kind) or t.is_string(kind)):
        leaf = dataclasses.replace(node.leaf, dtype="string" if t.is_string(kind) else "binary")
        return Node(node.hf, leaf, carried=node.carried)
    return node


def _same_kind(pa: Any, ours: Any, theirs: Any) -> bool:
    t = pa.types
    if t.is_struct(ours) or t.is_struct(theirs):
        return (
            t.is_struct(ours)
            and t.is_struct(theirs)
            and [f.name for f in ours] == [f.name for f in theirs]
            and all(_same_kind(pa, a.type, b.type) for a, b in zip(ours, theirs, strict=True))
        )
    if t.is_list(ours) or t.is_fixed_size_list(ours):
        fixed = t.is_fixed_size_list(ours)
        listed = t.is_fixed_size_list(theirs) if fixed else t.is_list(theirs)
        sizes = not fixed or ours.list_size == theirs.list_size
        return listed and sizes and _same_kind(pa, ours.value_type, theirs.value_type)
    if t.is_integer(ours):
        return t.is_integer(theirs) or t.is_boolean(theirs)
    if t.is_floating(ours):
        return t.is_floating(theirs)
    return (t.is_binary(ours) or t.is_string(ours)) and (t.is_binary(theirs) or t.is_string(theirs))


# ---------------------------------------------------------------- cells


def column(pa: Any, node: Node, cells: list[Any], scratch: Scratch | None = None) -> Any:
    """The Arrow array of a node's cells (as `cell` makes them, a dict for a dict node): a
    picture's or sound's struct {bytes, path} assembled from the bytes (laid out in
    `scratch`'s memory where given), not a dict a row."""
    if node.leaf is None:
        children = [column(pa, child, [c[name] for c in cells], scratch) for name, child in node.fields.items()]
        return pa.StructArray.from_arrays(
            children, fields=[pa.field(n, a.type) for n, a in zip(node.fields, children, strict=True)]
        )
    if node.leaf.kind in ("image", "raw_image", "audio") and node.leaf.dims[:1] != (None,):
        absent = [c is None for c in cells]
        blobs, paths = binary_column(pa, cells, scratch), pa.nulls(len(cells), pa.string())
        mask = pa.array(absent, pa.bool_()) if any(absent) else None
        return pa.StructArray.from_arrays([blobs, paths], names=list(_BLOB), mask=mask)
    return pa.array(cells, arrow_type(pa, node))


_OFFSETS_MAX = (1 << 31) - 1  # an Arrow binary array's offsets are 32-bit


class Scratch:
    """Memory that successive chunks' bytes columns are laid out in, a buffer used again
    once nothing holds the column made in it (the Arrow buffer over it is gone): a fresh
    allocation a chunk is memory the kernel faults in page by page, which costs more than
    the copy itself. Kept for one job in one process."""

    KEPT = 3  # the column being made, the one its consumer may still hold, one spare

    def __init__(self) -> None:
        self._buffers: list[bytearray] = []

    def take(self, size: int) -> bytearray:
        """A buffer of at least `size` bytes that nothing else holds."""
        for i in range(len(self._buffers)):
            if sys.getrefcount(self._buffers[i]) == 2:  # this list's and the call's: free
                if len(self._buffers[i]) < size:
                    self._buffers[i] = bytearray(size + size // 4)  # room for the next, a bit larger
                return self._buffers[i]
        buffer = bytearray(size + size // 4)
        if len(self._buffers) < self.KEPT:
            self._buffers.append(buffer)
        return buffer


def binary_column(pa: Any, cells: list[Any], scratch: Scratch | None = None) -> Any:
    """pa.array(cells, pa.binary()), of cells of bytes or views of bytes: where every cell
    is one, built from the cells laid out back to back (one copy, into `scratch`'s memory
    where given) and their offsets, as pa.array lays them out; pa.array copies each cell
    into a buffer it grows as it goes."""
    import array
    import itertools

    def cell_by_cell() -> Any:
        return pa.array([bytes(c) if type(c) is memoryview else c for c in cells], pa.binary())

    if not all(type(c) is bytes or type(c) is memoryview for c in cells):
        return cell_by_cell()
    ends = list(itertools.accumulate(map(len, cells), initial=0))
    if ends[-1] > _OFFSETS_MAX:
        return cell_by_cell()
    if scratch is None:
        data: Any = b"".join(cells)
    else:
        data = memoryview(scratch.take(ends[-1]))[: ends[-1]]
        for cell, start, stop in zip(cells, ends, ends[1:], strict=False):
            data[start:stop] = cell
    offsets = array.array("i", ends)
    return pa.Array.from_buffers(pa.binary(), len(cells), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def cell(leaf: Leaf, example: dict, media: Any = None) -> Any:
    """A record's value of the leaf (a picture's or sound's bytes: `column` makes their
    struct); SourceError naming the feature when it does not fit."""
    entry = example.get(leaf.key)
    values = entry[1] if entry is not None else []
    if entry is None:
        if leaf.optional or leaf.dims[:1] == (None,):
            return None if leaf.optional else []
        raise SourceError(f"no feature {leaf.key!r}")
    if leaf.kind == "image":
        return [{"bytes": v, "path": None} for v in values] if leaf.dims[:1] == (None,) else _one(leaf, values)
    if leaf.kind == "frames":
        return [{"bytes": v, "path": None} for v in values]
    if leaf.kind == "raw_image":
        return _png(leaf, _one(leaf, values))
    if leaf.kind == "audio":
        from .media import media_file

        return media_file(example, media)[0]
    if leaf.dtype == "string":
        try:
            values = [v.decode("utf-8") for v in values]
        except (UnicodeDecodeError, AttributeError):
            raise SourceError(f"feature {leaf.key!r} is not UTF-8 text, as its metadata says") from None
    return _shaped(leaf, values)


def _one(leaf: Leaf, values: list[Any]) -> Any:
    if len(values) != 1:
        raise SourceError(f"feature {leaf.key!r} holds {len(values)} values, not one")
    return values[0]


def _shaped(leaf: Leaf, values: list[Any]) -> Any:
    """Flat values as nested lists of the leaf's dims."""
    if not leaf.dims:
        return None if not values and leaf.optional else _one(leaf, values)
    inner = 1
    for size in leaf.dims[1:]:
        if size is None:
            raise SourceError(f"feature {leaf.key!r}: only its first dimension may vary")
        inner *= size
    first = leaf.dims[0]
    if len(values) % inner or (first is not None and len(values) != first * inner):
        raise SourceError(f"feature {leaf.key!r} holds {len(values)} values, which are no {_shape_text(leaf.dims)}")
    for size in reversed(leaf.dims[1:]):
        values = [values[i : i + size] for i in range(0, len(values), size)]
    return values


def _shape_text(dims: tuple[int | None, ...]) -> str:
    return "x".join("N" if d is None else str(d) for d in dims)


def _png(leaf: Leaf, data: bytes) -> bytes:
    import numpy as np
    from PIL import Image

    height, width, channels = leaf.dims
    if height is None or width is None or channels not in (1, 3, 4) or len(data) != height * width * channels:
        raise SourceError(f"feature {leaf.key!r}: {len(data)} bytes are no {_shape_text(leaf.dims)} pixels")
    pixels = np.frombuffer(data, np.uint8).reshape(height, width, channels)
    out = io.BytesIO()
    Image.fromarray(pixels[:, :, 0] if channels == 1 else pixels).save(out, "PNG")
    return out.getvalue()
