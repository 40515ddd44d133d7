"""Run a component's main coroutine on uvloop where it is installed, plain asyncio otherwise.

uvloop's event loop and its compiled TLS transport are what a busy asyncio process spends most
of its time in: asyncio's TLS is written in Python (``sslproto``). Measured in the benchmarks:
about a seventh of the webhook's CPU per admission, and a fifth of the controller's CPU per
object created (``docs/performance.md``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run"]

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    result: T = uvloop.run(main)
    return result
