"""The node agent's writes: retried with capped exponential back-off until they land, in order.

A kubelet's status manager never gives up on a pod's status: whatever the outage, the newest
status is written once the API server answers again. ``LatestWriter`` does that for one object's
status (a pod's, a node's, a Lease's): each write is handed over with ``write``; while a write is
failing, newer writes are folded into the one waiting (merge patches compose), so what lands is
always the latest state and never an older one after a newer. When the API server is healthy,
``write`` returns once the write landed, so watchers see every state as before; once a write has
failed, ``write`` returns at once and the writer keeps retrying in the background.

``retrying`` does the same for a one-off request (registering a node, a pod's final delete).
Failures that a retry cannot fix (a 422, a 403) are logged and dropped; a 404 means the object is
gone and nothing is left to write.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Generic, TypeVar

from kube.errors import ApiError, NotFound, is_retryable
from kube.workqueue import Backoff

logger = logging.getLogger(__name__)

T = TypeVar("T")

WRITE_BACKOFF = Backoff(base=0.2, max=5.0)
"""0.2 s, 0.4 s, ... capped at 5 s: an API server that comes back is written to within 5 s."""


def _retry_delay(error: BaseException, failures: int, backoff: Backoff) -> float:
    delay = backoff.delay(failures)
    retry_after = error.retry_after if isinstance(error, ApiError) else None
    return max(delay, min(retry_after or 0.0, backoff.max))


class Gone(Exception):
    """The object written to does not exist any more."""


async def retrying(
    call: Callable[[], Awaitable[T]], what: str, backoff: Backoff = WRITE_BACKOFF
) -> T:
    """``call()`` until it returns; retryable failures wait and retry, others are raised."""
    failures = 0
    while True:
        try:
            return await call()
        except Exception as error:
            if not is_retryable(error):
                raise
            failures += 1
            delay = _retry_delay(error, failures, backoff)
            logger.warning("%s failed (try %d), retrying in %.1fs: %s", what, failures, delay, error)
            await asyncio.sleep(delay)


def _set_event() -> asyncio.Event:
    event = asyncio.Event()
    event.set()
    return event


@dataclass(eq=False)
class LatestWriter(Generic[T]):
    """One object's writes, one at a time, the newest folded into any that is still waiting."""

    what: str
    send: Callable[[T], Awaitable[object]]
    fold: Callable[[T, T], T]
    _: KW_ONLY
    on_gone: Callable[[], None] | None = None
    backoff: Backoff = WRITE_BACKOFF
    gone: bool = field(default=False, init=False)
    _pending: T | None = field(default=None, init=False)
    _waiters: list[asyncio.Future[bool]] = field(default_factory=list, init=False)
    _failures: int = field(default=0, init=False)
    _task: asyncio.Task[None] | None = field(default=None, init=False)
    _idle: asyncio.Event = field(default_factory=_set_event, init=False)

    @property
    def failing(self) -> bool:
        """Whether the last try failed (the writer is retrying)."""
        return self._failures > 0

    async def write(self, value: T) -> bool:
        """Hand ``value`` over; True once it landed, False if it waits for the API server."""
        if self.gone:
            return False
        self._pending = value if self._pending is None else self.fold(self._pending, value)
        self._idle.clear()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"write-{self.what}")
        if self.failing:
            return False
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        return await waiter

    async def settled(self) -> None:
        """Wait until everything handed over has landed (or can never land)."""
        await self._idle.wait()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._answer(False)
        self._idle.set()

    def _answer(self, landed: bool, waiters: list[asyncio.Future[bool]] | None = None) -> None:
        if waiters is None:
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(landed)

    async def _run(self) -> None:
        try:
            while self._pending is not None:
                value, self._pending = self._pending, None
                # Only those who handed over what this try sends hear how it went.
                sent, self._waiters = self._waiters, []
                try:
                    await self.send(value)
                except (NotFound, Gone):
                    self._answer(False, sent)
                    self._gone()
                    return
                except Exception as error:
                    self._answer(False, sent)
                    if not is_retryable(error):
                        logger.error("%s: dropping a write that cannot succeed: %s", self.what, error)
                        continue
                    self._failures += 1
                    # What failed goes again, with anything newer folded on top of it.
                    self._pending = value if self._pending is None else self.fold(value, self._pending)
                    delay = _retry_delay(error, self._failures, self.backoff)
                    logger.warning(
                        "%s: write failed (try %d), retrying in %.1fs: %s",
                        self.what, self._failures, delay, error,
                    )  # fmt: skip
                    await asyncio.sleep(delay)
                    continue
                if self._failures:
                    logger.info("%s: written after %d failed tries", self.what, self._failures)
                self._failures = 0
                self._answer(True, sent)
        finally:
            if self._pending is None:
                self._idle.set()

    def _gone(self) -> None:
        self.gone = True
        self._pending = None
        self._answer(False)
        self._idle.set()
        if self.on_gone is not None:
            self.on_gone()


def newest(_older: T, newer: T) -> T:
    """The fold for writes that carry the whole state: the newer one supersedes."""
    return newer
