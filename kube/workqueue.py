"""A work queue of string keys with client-go semantics, for asyncio workers.

- Dedup: a key waiting in the queue is held once, however often it is added.
- One worker per key: a key handed out by ``get()`` is not handed out again until ``done(key)``; if it
  was added meanwhile, it goes back into the queue at ``done``.
- Per-key exponential retry: ``add_rate_limited(key)`` re-adds after ``base * 2**n`` seconds (capped
  at ``max``), ``n`` being the key's failures since the last ``forget(key)``.
- Timers: ``add_after(key, delay)``; when a key has several pending timers the earliest deadline wins.
  A pending timer survives an immediate ``add`` (a spurious extra run is harmless, a lost timer is not).
- Resync second: ``add_resync(key)`` queues a pass that no change asked for (every job after a
  restart, say) behind the keys of ``add``, so a change is not kept waiting by thousands of
  passes that will find nothing to do. An ``add`` of a key waiting as a resync moves it forward.
  The resync is never starved: while both wait, one resync key is handed out after every
  ``resync_share`` others.
- Metrics hooks: an optional ``WorkQueueObserver``; ``PrometheusWorkQueueMetrics`` implements it
  with client-go's metric names.

Public API:

- ``Backoff(base=0.5, max=300.0)`` -- frozen; ``delay(failures) -> float``.
- ``ShutDown`` -- raised by ``get()`` once the queue is shut down.
- ``WorkQueue(name="", *, backoff=Backoff(), observer=None, clock=time.monotonic, resync_share=8)``:
  ``add(key)``, ``add_resync(key)``, ``add_after(key, delay)``, ``add_rate_limited(key)``, ``forget(key)``,
  ``num_requeues(key) -> int``, ``async get() -> str``, ``done(key)``, ``shutdown()``,
  ``shutting_down``, ``len(queue)`` (keys ready now), ``pending_timers`` (keys waiting on a timer),
  ``processing`` (keys being worked on).
- ``WorkQueueObserver`` (Protocol): ``on_add(name)``, ``on_depth(name, depth)``, ``on_retry(name)``,
  ``on_queue_latency(name, seconds)``, ``on_work_duration(name, seconds)``.
- ``PrometheusWorkQueueMetrics(registry)`` -- ``workqueue_depth``, ``workqueue_adds_total``,
  ``workqueue_retries_total``, ``workqueue_queue_duration_seconds``,
  ``workqueue_work_duration_seconds``, all labelled by queue ``name``.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kube.apimetrics import LabelledChildren

__all__ = ["Backoff", "PrometheusWorkQueueMetrics", "ShutDown", "WorkQueue", "WorkQueueObserver"]

_M = TypeVar("_M", Counter, Gauge, Histogram)


class ShutDown(Exception):
    """The queue was shut down: workers should exit."""


@dataclass(frozen=True)
class Backoff:
    base: float = 0.5
    max: float = 300.0

    def __post_init__(self) -> None:
        if self.base <= 0 or self.max < self.base:
            raise ValueError(f"need 0 < base <= max, got base={self.base} max={self.max}")

    def delay(self, failures: int) -> float:
        """The wait before retry number ``failures`` (1 for the first retry)."""
        if failures <= 0:
            return 0.0
        # Cap the exponent first: 2**failures overflows a float after ~1000 failures.
        exponent = min(failures - 1, 64)
        return float(min(self.max, self.base * 2.0**exponent))


class WorkQueueObserver(Protocol):
    def on_add(self, name: str) -> None: ...
    def on_depth(self, name: str, depth: int) -> None: ...
    def on_retry(self, name: str) -> None: ...
    def on_queue_latency(self, name: str, seconds: float) -> None: ...
    def on_work_duration(self, name: str, seconds: float) -> None: ...


class PrometheusWorkQueueMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        def per_queue(metric: _M) -> LabelledChildren[_M]:
            return LabelledChildren(metric)

        self._depth = per_queue(Gauge("workqueue_depth", "Current depth of the work queue.", ["name"],
                                      registry=registry))
        self._adds = per_queue(Counter("workqueue_adds_total", "Adds handled by the work queue.", ["name"],
                                       registry=registry))
        self._retries = per_queue(Counter("workqueue_retries_total",
                                          "Rate-limited retries handled by the work queue.", ["name"],
                                          registry=registry))
        self._latency = per_queue(Histogram("workqueue_queue_duration_seconds",
                                            "Seconds a key waits in the work queue before being handed out.",
                                            ["name"], registry=registry))
        self._work = per_queue(Histogram("workqueue_work_duration_seconds", "Seconds spent processing a key.",
                                         ["name"], registry=registry))

    def on_add(self, name: str) -> None:
        self._adds(name).inc()

    def on_depth(self, name: str, depth: int) -> None:
        self._depth(name).set(depth)

    def on_retry(self, name: str) -> None:
        self._retries(name).inc()

    def on_queue_latency(self, name: str, seconds: float) -> None:
        self._latency(name).observe(seconds)

    def on_work_duration(self, name: str, seconds: float) -> None:
        self._work(name).observe(seconds)


class WorkQueue:
    def __init__(
        self,
        name: str = "",
        *,
        backoff: Backoff = Backoff(),
        observer: WorkQueueObserver | None = None,
        clock: Callable[[], float] = time.monotonic,
        resync_share: int = 8,
    ) -> None:
        if resync_share < 1:
            raise ValueError(f"resync_share must be at least 1, got {resync_share}")
        self.name = name
        self._backoff = backoff
        self._observer = observer
        self._clock = clock
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()  # keys that need processing (queued, or re-added while processing)
        self._processing: set[str] = set()
        # Resyncs: dirty keys no add() asked for, the ones of them waiting (not processing), and
        # their line, which may hold stale entries of keys since moved forward (skipped when met).
        self._resync_only: set[str] = set()
        self._resync_waiting: set[str] = set()
        self._resync_line: deque[str] = deque()
        self._resync_share = resync_share
        self._served_since_resync = 0
        self._added_at: dict[str, float] = {}
        self._started_at: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        # timers: a heap of (deadline, seq, key); stale heap entries are skipped when popped
        self._timers: list[tuple[float, int, str]] = []
        self._deadlines: dict[str, float] = {}
        self._seq = itertools.count()
        self._wakeup = asyncio.Event()
        self._shutting_down = False

    # -- adding ------------------------------------------------------------------------------

    def add(self, key: str) -> None:
        if self._shutting_down:
            return
        if key in self._dirty:
            if key in self._resync_only:
                self._resync_only.discard(key)
                if key in self._resync_waiting:
                    self._resync_waiting.discard(key)
                    if not self._resync_waiting:
                        self._resync_line.clear()  # only stale entries are left in it
                    self._queue.append(key)
                    self._wakeup.set()
            return
        self._dirty.add(key)
        self._added_at[key] = self._clock()
        if self._observer is not None:
            self._observer.on_add(self.name)
        if key not in self._processing:
            self._queue.append(key)
            self._report_depth()
            self._wakeup.set()

    def add_resync(self, key: str) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        self._resync_only.add(key)
        self._added_at[key] = self._clock()
        if self._observer is not None:
            self._observer.on_add(self.name)
        if key not in self._processing:
            self._wait_for_resync(key)

    def add_after(self, key: str, delay: float) -> None:
        if not math.isfinite(delay):
            raise ValueError(f"delay for {key!r} must be a finite number of seconds, got {delay!r}")
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        deadline = self._clock() + delay
        current = self._deadlines.get(key)
        if current is not None and current <= deadline:
            return
        self._deadlines[key] = deadline
        heapq.heappush(self._timers, (deadline, next(self._seq), key))
        self._wakeup.set()

    def add_rate_limited(self, key: str) -> None:
        failures = self._failures.get(key, 0) + 1
        self._failures[key] = failures
        if self._observer is not None:
            self._observer.on_retry(self.name)
        self.add_after(key, self._backoff.delay(failures))

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: str) -> int:
        return self._failures.get(key, 0)

    # -- consuming ---------------------------------------------------------------------------

    async def get(self) -> str:
        while True:
            if self._shutting_down:
                raise ShutDown(self.name)
            self._fire_due_timers()
            key = self._next_ready()
            if key is not None:
                self._processing.add(key)
                self._dirty.discard(key)
                self._resync_only.discard(key)
                now = self._clock()
                self._started_at[key] = now
                added = self._added_at.pop(key, now)
                if self._observer is not None:
                    self._observer.on_queue_latency(self.name, max(0.0, now - added))
                self._report_depth()
                return key
            self._wakeup.clear()
            timeout = self._timers[0][0] - self._clock() if self._timers else None
            try:
                async with asyncio.timeout(timeout):
                    await self._wakeup.wait()
            except TimeoutError:
                pass

    def done(self, key: str) -> None:
        if key not in self._processing:
            return
        self._processing.discard(key)
        started = self._started_at.pop(key, None)
        if started is not None and self._observer is not None:
            self._observer.on_work_duration(self.name, max(0.0, self._clock() - started))
        if key in self._dirty and not self._shutting_down:
            if key in self._resync_only:
                self._wait_for_resync(key)
                return
            self._queue.append(key)
            self._report_depth()
            self._wakeup.set()

    def shutdown(self) -> None:
        self._shutting_down = True
        self._wakeup.set()

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def __len__(self) -> int:
        return len(self._queue) + len(self._resync_waiting)

    @property
    def pending_timers(self) -> int:
        return len(self._deadlines)

    @property
    def processing(self) -> frozenset[str]:
        return frozenset(self._processing)

    # -- internals ---------------------------------------------------------------------------

    def _wait_for_resync(self, key: str) -> None:
        self._resync_waiting.add(key)
        self._resync_line.append(key)
        self._report_depth()
        self._wakeup.set()

    def _next_ready(self) -> str | None:
        if self._resync_waiting and (not self._queue or self._served_since_resync >= self._resync_share):
            while True:
                key = self._resync_line.popleft()
                if key in self._resync_waiting:
                    self._resync_waiting.discard(key)
                    self._served_since_resync = 0
                    return key
        if self._queue:
            self._served_since_resync += 1
            return self._queue.popleft()
        return None

    def _fire_due_timers(self) -> None:
        now = self._clock()
        while self._timers and self._timers[0][0] <= now:
            deadline, _, key = heapq.heappop(self._timers)
            if self._deadlines.get(key) != deadline:
                continue  # superseded by an earlier deadline
            del self._deadlines[key]
            self.add(key)

    def _report_depth(self) -> None:
        if self._observer is not None:
            self._observer.on_depth(self.name, len(self))
