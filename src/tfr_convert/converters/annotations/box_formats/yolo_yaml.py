"""A YOLO dataset's YAML (data.yaml, dataset.yaml, coco8.yaml), read by a YAML parser:
PyYAML's safe loader, never a hand-written one (`test: # test images (optional)` is a
null, not the path "# test images (optional)"). What the YOLO tools write and read:

    path: ../datasets/coco8   the dataset's root (the YAML's own folder where absent)
    train: images/train       a folder of pictures, a list file, or a list of either
    val: images/val
    test:                     null: no such split
    names:                    a list, or a mapping from 0..N-1
      0: person
"""

from __future__ import annotations

from typing import Any

from ....errors import SourceError

MAX_YAML_BYTES = 16 << 20


def load(path: str) -> dict[str, Any]:
    """The YAML's top-level mapping ({} for an empty file); a SourceError naming the file
    and line for one that is not YAML, is too large, nests past the parser, or is no mapping."""
    import yaml

    with open(path, "rb") as f:
        data = f.read(MAX_YAML_BYTES + 1)
    if len(data) > MAX_YAML_BYTES:
        raise SourceError(f"{path}: larger than {MAX_YAML_BYTES >> 20} MiB: no dataset YAML is")
    try:
        doc = yaml.safe_load(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise SourceError(f"{path}: byte {e.start}: not UTF-8") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise SourceError(f"{path}: {where}not YAML ({getattr(e, 'problem', None) or e})") from None
    except RecursionError:  # the composer recurses once per level
        raise SourceError(f"{path}: not YAML this reads (nested too deep)") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise SourceError(
            f"{path}: holds a YAML {type(doc).__name__}, where a dataset YAML has keys (names:, train:...)"
        )
    return doc


def names(path: str, doc: dict[str, Any]) -> list[str]:
    """`names:`: a list, or a mapping from 0..N-1 (the two forms the YOLO tools write)."""
    names_given = doc.get("names")
    if isinstance(names_given, dict):
        if sorted(names_given, key=str) != sorted(range(len(names_given)), key=str) or not all(
            isinstance(k, int) for k in names_given
        ):
            raise SourceError(f"{path}: names: numbers must run 0..{len(names_given) - 1}")
        names_given = [names_given[k] for k in range(len(names_given))]
    if not isinstance(names_given, list):
        raise SourceError(f"{path}: no names: (the class names) as a list or a mapping from 0")
    for i, name in enumerate(names_given):
        if not isinstance(name, (str, int, float)) or isinstance(name, bool) or str(name) == "":
            raise SourceError(f"{path}: names: entry {i} is no class name")
    return [str(name) for name in names_given]


def paths(path: str, doc: dict[str, Any], key: str) -> list[str]:
    """A key's folders or list files: none for a null (a split the dataset does not have)."""
    value = doc.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise SourceError(f"{path}: {key}: is neither a path nor a list of paths")
