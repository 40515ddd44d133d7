"""The C heap's mmap threshold is fixed where the C library has ``mallopt`` (glibc), and asking
is harmless where it has not."""

from __future__ import annotations

import ctypes

import pytest

from webhook.native_heap import fix_mmap_threshold


def test_glibc_takes_the_threshold() -> None:
    if not hasattr(ctypes.CDLL(None), "mallopt"):
        pytest.skip("this C library has no mallopt (not glibc)")
    assert fix_mmap_threshold() is True


def test_a_c_library_without_mallopt_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoMallopt:
        def __init__(self, name: object) -> None:
            pass

    monkeypatch.setattr(ctypes, "CDLL", NoMallopt)
    assert fix_mmap_threshold() is False
