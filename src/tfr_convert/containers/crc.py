"""CRC32C as TFRecord uses it: the hardware CRC of any buffer, and its mask.

masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8 (mod 2**32). This is the one
place that knows the mask, for single values and for numpy arrays of CRCs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where arrays are masked: reading files needs none of it
    import numpy as np

_MASK_DELTA = 0xA282EAD8


def _load_crc32c():
    """The `crc32c` function of the crc32c package's C extension.

    The package's __init__ looks its own version up through importlib.metadata,
    which costs about 60 ms at every start of every command, more than a whole
    `tfr-inspect` on a small file otherwise takes. Load the extension module by
    itself (finding the package does not run it); fall back to a plain import.
    """
    import importlib.machinery
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec("crc32c")
        for folder in (spec and spec.submodule_search_locations) or ():
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(folder, "_crc32c" + suffix)
                if os.path.exists(path):
                    loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
                    loader.exec_module(module)
                    return module.crc32c
    except ImportError:  # what Python's loader raises for any file it cannot load as this extension
        pass
    from crc32c import crc32c

    return crc32c


# crc32c(buffer, value=0) -> the plain (unmasked) CRC32C of any buffer: views of
# larger buffers (numpy rows, windows of a file) need no copy, and it releases
# the GIL on large ones.
crc32c = _load_crc32c()


def masked_crc(data: bytes | bytearray | memoryview) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def mask_array(crcs: np.ndarray) -> np.ndarray:
    """masked_crc's mask over a uint32 array of plain CRCs, all at once (wrapping)."""
    import numpy as np

    crcs = crcs.astype(np.uint32, copy=False)
    return ((crcs >> 15) | (crcs << 17)) + np.uint32(_MASK_DELTA)


def unmask(masked: int) -> int:
    """The CRC32C a masked CRC was made from (the inverse of the rotate-and-add)."""
    rotated = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rotated << 15) | (rotated >> 17)) & 0xFFFFFFFF
