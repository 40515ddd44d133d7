"""A token bucket: ``qps`` tokens per second, at most ``burst`` saved up.

Used by ``KubeApi`` for client-side QPS/burst limits and by the event recorder for write limits.

Public API:

- ``TokenBucket(qps, burst, *, clock=time.monotonic)``; ``qps <= 0`` means unlimited.
  - ``reserve() -> float``: take a token now, returning how long the caller must wait before using
    it (0.0 when one was available). Reservations queue up fairly, as in client-go.
  - ``try_acquire() -> bool``: take a token only if one is available right now.
  - ``async acquire() -> None``: reserve and sleep for the returned delay.
  - ``available -> float``: tokens available now (negative when reservations are outstanding).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["TokenBucket"]


class TokenBucket:
    def __init__(self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self._qps = float(qps)
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    @property
    def unlimited(self) -> bool:
        return self._qps <= 0

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._tokens = min(self._burst, self._tokens + elapsed * self._qps)

    @property
    def available(self) -> float:
        if self.unlimited:
            return self._burst
        self._refill()
        return self._tokens

    def try_acquire(self) -> bool:
        if self.unlimited:
            return True
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def reserve(self) -> float:
        if self.unlimited:
            return 0.0
        self._refill()
        self._tokens -= 1.0
        if self._tokens >= 0.0:
            return 0.0
        return -self._tokens / self._qps

    async def acquire(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await asyncio.sleep(delay)
