"""A log budget for client errors: anyone can send a malformed request, so one sender must not be
able to fill the disk or drown the useful lines.

At most ``burst`` lines per ``window`` seconds get through; the rest are counted, and the first
line after the window says how many were suppressed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any


class LogBudget:
    def __init__(
        self, *, burst: int = 10, window: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._burst = burst
        self._window = window
        self._clock = clock
        self._window_started = -window
        self._spent = 0
        self._suppressed = 0

    def log(self, logger: logging.Logger, level: int, message: str, *args: Any, **kwargs: Any) -> None:
        if not logger.isEnabledFor(level):
            return
        now = self._clock()
        if now - self._window_started >= self._window:
            self._window_started, self._spent = now, 0
        if self._spent >= self._burst:
            self._suppressed += 1
            return
        self._spent += 1
        if self._suppressed:
            message += f" ({self._suppressed} more suppressed)"
            self._suppressed = 0
        logger.log(level, message, *args, **kwargs)
