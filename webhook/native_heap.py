"""Giving back to the system the C heap that a burst of connections left free.

Each TLS connection holds a 256 KiB read buffer in uvloop's (and asyncio's) SSL protocol, taken
with ``malloc``. glibc serves a block that large with its own mapping only until it frees one:
its mmap threshold then rises to that block's size (up to 32 MiB), and later buffers, and large
request bodies, come from the heap. When a burst of connections closes, the small objects
allocated between their buffers keep the heap from shrinking from its top, and the process keeps
the pages: in the storm of hostile requests (``bench/webhook_storm.py``) the webhook stayed 40-46
MiB larger. Fixing the mmap threshold (``mallopt``) gave the buffers back, but also made each TLS
read's 256 KiB scratch ``bytes`` a mapping of its own, an mmap and munmap per read: 30-50 us more
CPU per review.

``malloc_trim(0)`` instead returns the free whole pages inside the heap (not only its top). It
walks the allocator's free lists, so ``HeapTrimmer`` calls it only when the heap's free bytes
below its top (``mallinfo2``) have grown by ``slack`` since the lowest they were since the last
trim: after connections or large bodies were freed, not while reviews come and go on kept-alive
connections, whose blocks are reused as they are freed. A look is one ``mallinfo2`` call (a walk
of the free lists: microseconds, about a millisecond on a heap a storm left in 10,000 pieces) per
``interval``; at most one trim per look.

Other C libraries (musl) have neither call: there the trimmer does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import time
from typing import Final

logger = logging.getLogger(__name__)

MIB: Final = 1024 * 1024
# Four connections' TLS read buffers. A trim gives back only free pages, so its cost (the walk,
# then a page fault for each page given back when it is used again) is bounded by one a look; in
# the storm, 8 MiB left 24 MiB of freed pages in use again, uncounted, where 1 MiB left 2.5 MiB.
DEFAULT_SLACK: Final = 1 * MIB
DEFAULT_INTERVAL: Final = 1.0


class _MallInfo2(ctypes.Structure):
    # glibc's struct mallinfo2 (malloc.h, glibc 2.33 and later): every field a size_t.
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd",
            "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


class HeapTrimmer:
    """Trims the C heap once its free bytes below the top grew by ``slack`` (see the module)."""

    def __init__(self, slack: int = DEFAULT_SLACK, libc: ctypes.CDLL | None = None) -> None:
        self.slack = slack
        self.trims = 0
        try:
            libc = libc if libc is not None else ctypes.CDLL(None)
            self._mallinfo2 = libc.mallinfo2
            self._malloc_trim = libc.malloc_trim
        except (OSError, AttributeError):
            logger.debug("this C library has no mallinfo2 and malloc_trim (not glibc): no heap trims")
            self.available = False
            self._floor = 0
            return
        self._mallinfo2.argtypes = ()
        self._mallinfo2.restype = _MallInfo2
        self._malloc_trim.argtypes = (ctypes.c_size_t,)
        self._malloc_trim.restype = ctypes.c_int
        self.available = True
        self._floor = self.free_bytes()

    def free_bytes(self) -> int:
        """Bytes the heap holds free below its top chunk (the top is trimmed by ``free`` itself)."""
        if not self.available:
            return 0
        info = self._mallinfo2()
        return int(info.fordblks - info.keepcost)

    def trim_if_grown(self) -> bool:
        """Trim when the free bytes grew by ``slack`` since their lowest; True when it trimmed."""
        if not self.available:
            return False
        free = self.free_bytes()
        if free - self._floor < self.slack:
            self._floor = min(self._floor, free)
            return False
        started = time.perf_counter()
        self._malloc_trim(0)
        # Trimmed pages stay on the free lists (as free bytes), so the next growth counts from here.
        self._floor = free
        self.trims += 1
        logger.debug(
            "gave back the heap's free pages (%.1f MiB free below the top) in %.1f ms",
            free / MIB,
            (time.perf_counter() - started) * 1000,
        )
        return True

    async def run(self, interval: float = DEFAULT_INTERVAL) -> None:
        """Look every ``interval`` seconds until cancelled (at once returns where nothing can be done)."""
        while self.available:
            await asyncio.sleep(interval)
            self.trim_if_grown()
