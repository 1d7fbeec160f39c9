"""atheris's entry: `python fuzz_target.py KIND CORPUS [libFuzzer options]` fuzzes one
property of fuzz_properties.py; a property that fails is a crash (libFuzzer writes its
input as crash-* and exits non-zero)."""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["tfr_convert"]):
    from fuzz_properties import PROPERTIES

if __name__ == "__main__":
    prop = PROPERTIES[sys.argv.pop(1)]
    atheris.Setup(sys.argv, lambda data: prop(bytes(data)))
    atheris.Fuzz()
