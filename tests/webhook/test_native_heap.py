"""The C heap a burst of large blocks left free goes back to the system, and only after such a
burst; a C library without glibc's calls is left alone."""

from __future__ import annotations

import asyncio
import ctypes
import os
from pathlib import Path

import pytest

from webhook.native_heap import MIB, HeapTrimmer

BUFFER = 256 * 1024  # a TLS connection's read buffer in uvloop's SSL protocol
PAGE = os.sysconf("SC_PAGE_SIZE")


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("this C library has no mallinfo2 (not glibc 2.33 or later)")
    libc.malloc.argtypes = (ctypes.c_size_t,)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = (ctypes.c_void_p,)
    return libc


def _resident_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * PAGE


def _from_the_heap(libc: ctypes.CDLL) -> None:
    # Freeing a mapped block raises glibc's mmap threshold to its size: from then on, blocks of a
    # buffer's size come from the heap, as in a webhook that has served a few connections.
    libc.free(libc.malloc(4 * BUFFER))


def _buffer(libc: ctypes.CDLL) -> int:
    block = libc.malloc(BUFFER)
    assert block
    ctypes.memset(block, 1, BUFFER)
    return int(block)


def test_a_burst_of_freed_buffers_goes_back_to_the_system() -> None:
    libc = _libc()
    _from_the_heap(libc)
    trimmer = HeapTrimmer(slack=8 * MIB, libc=libc)
    # 128 buffers held at once (as open connections hold theirs); every other one is then freed,
    # so each hole lies below a block still in use and the heap cannot shrink from its top.
    blocks = [_buffer(libc) for _ in range(128)]
    held = blocks[1::2]
    # A look while they are all in use, as the webhook's once a second: the buffers may have come
    # from free bytes a heap used before this test held, so the floor is taken from here.
    assert trimmer.trim_if_grown() is False
    for block in blocks[::2]:
        libc.free(block)
    try:
        assert trimmer.free_bytes() >= 64 * BUFFER
        resident = _resident_bytes()
        assert trimmer.trim_if_grown() is True
        assert resident - _resident_bytes() >= 12 * MIB  # of the 16 MiB freed
        assert trimmer.trims == 1
        # Trimmed pages stay on the free lists: nothing more was freed, so no second trim.
        assert trimmer.trim_if_grown() is False
    finally:
        for block in held:
            libc.free(block)


def test_buffers_reused_as_they_are_freed_never_trim() -> None:
    libc = _libc()
    _from_the_heap(libc)
    trimmer = HeapTrimmer(slack=8 * MIB, libc=libc)
    # Connections that come and go one at a time, each leaving a block in use behind (as a
    # request's objects do), reuse one hole: the free bytes do not grow.
    held = []
    for _ in range(64):
        buffer = _buffer(libc)
        held.append(_buffer(libc))
        libc.free(buffer)
    try:
        assert trimmer.trim_if_grown() is False
        assert trimmer.trims == 0
    finally:
        for block in held:
            libc.free(block)


def test_a_c_library_without_the_calls_is_left_alone() -> None:
    class NotGlibc(ctypes.CDLL):
        def __init__(self) -> None:
            pass  # no library loaded: no symbols at all

        def __getattr__(self, name: str) -> object:
            raise AttributeError(name)

    trimmer = HeapTrimmer(libc=NotGlibc())
    assert trimmer.available is False
    assert trimmer.free_bytes() == 0
    assert trimmer.trim_if_grown() is False
    # Its task ends at once rather than waking every interval for nothing.
    asyncio.run(asyncio.wait_for(trimmer.run(interval=0.01), 1.0))
