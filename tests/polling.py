"""The one polling helper of the tests: wait until a check holds, or fail saying what was awaited.

``eventually`` is for async tests and takes a plain or an async check; ``wait_for`` is the same
for tests without an event loop (they drive ``kubectl`` or processes). Both return the check's
last, truthy value, so a test can wait for an object and use it.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class _Deadline:
    def __init__(self, within: float, what: str) -> None:
        self.within, self.what = within, what
        self._at = time.monotonic() + within

    def reached(self, last: Any) -> bool:
        if time.monotonic() > self._at:
            raise AssertionError(
                f"timed out after {self.within}s waiting for {self.what}; last value {last!r}"
            )
        return False


async def eventually(
    check: Callable[[], T | Awaitable[T]],
    within: float = 15.0,
    what: str = "condition",
    interval: float = 0.05,
) -> T:
    """Poll ``check`` (plain or async) until it returns something truthy; fail after ``within``."""
    deadline = _Deadline(within, what)
    while True:
        result = check()
        last: T = await result if inspect.isawaitable(result) else result  # type: ignore[assignment]
        if last or deadline.reached(last):
            return last
        await asyncio.sleep(interval)


def wait_for(
    check: Callable[[], T], what: str = "condition", within: float = 30.0, interval: float = 0.1
) -> T:
    """``eventually`` for synchronous tests."""
    deadline = _Deadline(within, what)
    while True:
        last = check()
        if last or deadline.reached(last):
            return last
        time.sleep(interval)
