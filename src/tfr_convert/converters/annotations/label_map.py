"""The classes of an Object Detection API dataset: each class's label (the format's own
ids, or 1..N; 0 is the background), the ClassLabel names by label, and label_map.pbtxt."""

from __future__ import annotations

from ...errors import SourceError

_PBTXT_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\x7f": "\\177"}


def label_map_pbtxt(labels: dict[str, int]) -> bytes:
    """The API's label map: `item { id: N name: "..." }` for each class and its label."""

    def quoted(name: str) -> str:  # protobuf's text format: C escapes, so no name breaks a line
        return '"' + "".join(_PBTXT_ESCAPES.get(c) or (f"\\{ord(c):03o}" if c < " " else c) for c in name) + '"'

    return "".join(f"item {{\n  id: {i}\n  name: {quoted(n)}\n}}\n" for n, i in labels.items()).encode()


MAX_KEPT_ID = 1 << 16  # a kept category id names a class slot: more would be mostly empty ones


def class_labels(classes: list[str], ids: list[int] | None, where: str) -> dict[str, int]:
    """Each class's label: the format's own ids (`ids`, COCO's kept), else 1..N in order.
    Label 0 is the background, so a kept id must be at least 1."""
    if ids is None:
        return {name: i for i, name in enumerate(classes, 1)}
    for name, cid in zip(classes, ids, strict=True):
        if not 1 <= cid <= MAX_KEPT_ID:
            raise SourceError(
                f"{where}: category {name!r} has id {cid}; kept ids run from 1 (0 is the background) "
                f"to {MAX_KEPT_ID}: give --coco-ids contiguous to number the classes 1..N"
            )
    return dict(zip(classes, ids, strict=True))


def label_names(labels: dict[str, int]) -> list[str]:
    """The class names by label, 0 the background, for the ClassLabel feature; a label
    no class has (between kept COCO ids) is named '(unused N)'."""
    background = "background" if "background" not in labels else "__background__"
    names = [f"(unused {i})" for i in range(max(labels.values(), default=0) + 1)]
    names[0] = background
    for name, label in labels.items():
        names[label] = name
    return names
