"""The C heap's mmap threshold, fixed so that memory a burst of connections took goes back to the
system when they close.

Each TLS connection holds a 256 KiB read buffer in uvloop's (and asyncio's) SSL protocol, and a
large request body is a buffer of its size. glibc serves allocations above its mmap threshold
(128 KiB) with their own mappings, returned to the system on free, but it raises the threshold
to the size of each such block freed (up to 32 MiB): after the first connections close, later
buffers come from the heap, where they fragment it and the process keeps the pages. In the storm
of hostile requests (``bench/webhook_storm.py``: 300 slow-header connections beside the rest)
the webhook's RSS grew by 40 MiB and stayed there; with the threshold fixed, by 13 MiB.

``mallopt(M_MMAP_THRESHOLD, ...)`` sets it and turns the adjustment off, as the
``MALLOC_MMAP_THRESHOLD_`` environment variable would. Other C libraries (musl) have no
``mallopt``: nothing is done there.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Final

logger = logging.getLogger(__name__)

# glibc's malloc.h; 128 KiB is glibc's own starting value.
_M_MMAP_THRESHOLD: Final = -3
MMAP_THRESHOLD: Final = 128 * 1024


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """True when the C library took the threshold."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    taken = bool(mallopt(_M_MMAP_THRESHOLD, threshold))
    if not taken:
        logger.debug("the C library refused an mmap threshold of %d bytes", threshold)
    return taken
