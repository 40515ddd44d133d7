"""Record core/v1 Events without blocking the caller, aggregating repeats.

``record()`` only updates in-memory state and wakes a background writer task. Repeats of the same
(object, type, reason, message) become one Event whose ``count`` and ``lastTimestamp`` are patched,
as ``kubectl describe`` shows them (``x3 over 2m``); several repeats recorded before the writer gets
to them are folded into a single write. Writes are rate-limited by a token bucket. A failed write
that may succeed later (no answer, 429, 5xx) is retried with capped exponential back-off, its
occurrences folded into the next write of the same Event; any other failed write is logged and
dropped. Nothing is ever raised to the caller.

Public API:

- ``EventRecorder(api, component, *, host=None, qps=5.0, burst=25, max_tracked=4096)``
  - ``record(involved, type, reason, message) -> None`` -- ``involved`` is an object (or an
    object reference) with ``apiVersion``, ``kind`` and ``metadata`` (name, namespace, uid); ``type``
    is ``Normal`` or ``Warning``. Needs a running event loop (the writer starts lazily).
  - ``async flush()`` -- wait until everything recorded so far has been written (or dropped).
  - ``async close(drain_seconds=5.0)`` -- flush (for at most that long) and stop the writer.
  - ``event_body(write, name, namespace) -> dict`` -- the Event it creates for a write.
- ``EventKey`` -- frozen; the aggregation key. ``event_key(involved, type, reason, message)``.
- ``EventAggregator(max_tracked=4096)`` -- the I/O-free bookkeeping: ``observe(key, now)``,
  ``next_write() -> EventWrite | None``, ``written(write, name, namespace)``, ``lost(write)``,
  ``retry(write)`` (its occurrences are unwritten again),
  ``len()`` (keys with unwritten occurrences), ``tracked``.
- ``EventWrite`` -- frozen: ``key, count, first_seen, last_seen, existing_name, existing_namespace``.
- ``event_name(involved_name, now) -> str`` -- ``<name>.<hex nanoseconds>``, as client-go names them.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kube.api import KubeApi
from kube.errors import ApiError, NotFound, is_retryable
from kube.patches import PatchType
from kube.ratelimit import TokenBucket
from kube.resources import EVENTS
from kube.workqueue import Backoff

__all__ = ["EventAggregator", "EventKey", "EventRecorder", "EventWrite", "event_key", "event_name"]

logger = logging.getLogger(__name__)

EVENT_TYPES = frozenset({"Normal", "Warning"})
RETRY_BACKOFF = Backoff(base=0.2, max=5.0)
MAX_MESSAGE = 1024


@dataclass(frozen=True)
class EventKey:
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    type: str
    reason: str
    message: str


def _reference(involved: Mapping[str, Any]) -> dict[str, str]:
    metadata = involved.get("metadata")
    source: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else involved
    ref = {
        "apiVersion": str(involved.get("apiVersion") or ""),
        "kind": str(involved.get("kind") or ""),
        "namespace": str(source.get("namespace") or ""),
        "name": str(source.get("name") or ""),
        "uid": str(source.get("uid") or ""),
    }
    if not ref["kind"] or not ref["name"]:
        raise ValueError("the involved object needs a kind and a metadata.name")
    return ref


def event_key(involved: Mapping[str, Any], type: str, reason: str, message: str) -> EventKey:
    ref = _reference(involved)
    return EventKey(ref["apiVersion"], ref["kind"], ref["namespace"], ref["name"], ref["uid"], type, reason,
                    message[:MAX_MESSAGE])


def event_name(involved_name: str, now: datetime.datetime) -> str:
    nanos = int(now.timestamp() * 1_000_000) * 1000
    suffix = f".{nanos:x}"
    # Object names are at most 253 characters; a long involved name is cut, not the unique suffix.
    return involved_name[: 253 - len(suffix)] + suffix


def _timestamp(now: datetime.datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Series:
    """One aggregated Event: its name once written, the count written, and repeats not yet written."""

    first_seen: datetime.datetime
    last_seen: datetime.datetime
    event_name: str | None = None
    event_namespace: str = ""
    written_count: int = 0
    pending: int = 0


@dataclass(frozen=True)
class EventWrite:
    """One write the recorder must make: create an Event (``existing_name`` is None) or patch it."""

    key: EventKey
    count: int
    first_seen: datetime.datetime
    last_seen: datetime.datetime
    existing_name: str | None
    existing_namespace: str


class EventAggregator:
    """The bookkeeping of aggregation, without I/O: which Event to create or patch, with what count.

    ``observe`` notes one occurrence; ``next_write`` hands out the oldest key with unwritten
    occurrences (all of them folded into one write); ``written`` records where the Event now lives;
    ``lost`` forgets an Event that vanished (expired) so the next write creates a new one. At most
    ``max_tracked`` series are remembered (least recently seen dropped first).
    """

    def __init__(self, max_tracked: int = 4096) -> None:
        if max_tracked < 1:
            raise ValueError("max_tracked must be at least 1")
        self._max_tracked = max_tracked
        self._series: OrderedDict[EventKey, _Series] = OrderedDict()
        self._dirty: OrderedDict[EventKey, None] = OrderedDict()

    def __len__(self) -> int:
        """How many keys have occurrences not yet handed out for writing."""
        return len(self._dirty)

    @property
    def tracked(self) -> int:
        return len(self._series)

    def observe(self, key: EventKey, now: datetime.datetime) -> None:
        series = self._series.get(key)
        if series is None:
            series = _Series(first_seen=now, last_seen=now)
            self._series[key] = series
            while len(self._series) > self._max_tracked:
                evicted, _ = self._series.popitem(last=False)
                self._dirty.pop(evicted, None)
        else:
            self._series.move_to_end(key)
            series.last_seen = max(series.last_seen, now)
        series.pending += 1
        self._dirty[key] = None

    def next_write(self) -> EventWrite | None:
        while self._dirty:
            key, _ = self._dirty.popitem(last=False)
            series = self._series.get(key)
            if series is None or series.pending == 0:
                continue
            count = series.written_count + series.pending
            series.pending = 0
            return EventWrite(key, count, series.first_seen, series.last_seen, series.event_name,
                              series.event_namespace)
        return None

    def written(self, write: EventWrite, name: str, namespace: str) -> None:
        series = self._series.get(write.key)
        if series is None:
            return
        series.event_name = name
        series.event_namespace = namespace
        series.written_count = max(series.written_count, write.count)

    def retry(self, write: EventWrite) -> None:
        """The write failed but may succeed later: its occurrences go out with the next write."""
        series = self._series.get(write.key)
        if series is None:
            return
        series.pending += max(0, write.count - series.written_count)
        self._dirty[write.key] = None
        self._dirty.move_to_end(write.key, last=False)

    def lost(self, write: EventWrite) -> None:
        series = self._series.get(write.key)
        if series is not None and series.event_name == write.existing_name:
            series.event_name = None
            series.event_namespace = ""


class EventRecorder:
    def __init__(
        self,
        api: KubeApi,
        component: str,
        *,
        host: str | None = None,
        qps: float = 5.0,
        burst: int = 25,
        max_tracked: int = 4096,
    ) -> None:
        self._api = api
        self._component = component
        self._host = host
        self._limiter = TokenBucket(qps, burst)
        self._aggregator = EventAggregator(max_tracked)
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False

    def record(self, involved: Mapping[str, Any], type: str, reason: str, message: str) -> None:
        if self._closed:
            logger.warning("event %s %s dropped: the recorder is closed", type, reason)
            return
        if type not in EVENT_TYPES:
            logger.error("event %s dropped: type %r is not Normal or Warning", reason, type)
            return
        try:
            key = event_key(involved, type, reason, message)
        except ValueError as exc:
            logger.error("event %s dropped: %s", reason, exc)
            return
        self._aggregator.observe(key, datetime.datetime.now(datetime.UTC))
        self._idle.clear()
        self._ensure_writer()
        self._wakeup.set()

    async def flush(self) -> None:
        writer = self._writer
        if writer is None or writer.done():
            return
        idle = asyncio.ensure_future(self._idle.wait())
        try:
            # The writer only ends when cancelled; do not wait for an idle signal that cannot come.
            await asyncio.wait({idle, writer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            idle.cancel()

    async def close(self, drain_seconds: float = 5.0) -> None:
        self._closed = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(drain_seconds):
                await self.flush()
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
            self._writer = None

    # -- internals ---------------------------------------------------------------------------

    def _ensure_writer(self) -> None:
        if self._writer is None or self._writer.done():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                logger.error("events need a running event loop; %d pending", len(self._aggregator))
                return
            self._writer = loop.create_task(self._write_loop(), name=f"event-recorder-{self._component}")

    async def _write_loop(self) -> None:
        failures = 0
        while True:
            if not self._aggregator:
                self._idle.set()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            await self._limiter.acquire()
            write = self._aggregator.next_write()
            if write is None:
                continue
            key = write.key
            try:
                await self._write(write)
                failures = 0
            except ApiError as exc:
                if is_retryable(exc):
                    failures += 1
                    delay = RETRY_BACKOFF.delay(failures)
                    logger.warning("could not write event %s for %s %s/%s (retrying in %.1fs): %s",
                                   key.reason, key.kind, key.namespace, key.name, delay, exc)
                    self._aggregator.retry(write)
                    await asyncio.sleep(delay)
                    continue
                logger.warning("could not write event %s for %s %s/%s: %s",
                               key.reason, key.kind, key.namespace, key.name, exc)
            except Exception:
                logger.exception("could not write event %s for %s %s/%s",
                                 key.reason, key.kind, key.namespace, key.name)

    async def _write(self, write: EventWrite) -> None:
        if write.existing_name is not None:
            patch = {"count": write.count, "lastTimestamp": _timestamp(write.last_seen)}
            try:
                await self._api.patch(EVENTS, write.existing_name, patch, write.existing_namespace,
                                      patch_type=PatchType.MERGE)
                self._aggregator.written(write, write.existing_name, write.existing_namespace)
                return
            except NotFound:
                # The Event expired (the API server keeps them ~1h): start a new one with the count.
                self._aggregator.lost(write)
        namespace = write.key.namespace or "default"
        name = event_name(write.key.name, datetime.datetime.now(datetime.UTC))
        await self._api.create(EVENTS, self.event_body(write, name, namespace), namespace)
        self._aggregator.written(write, name, namespace)

    def event_body(self, write: EventWrite, name: str, namespace: str) -> dict[str, Any]:
        """The core/v1 Event created for ``write``."""
        key = write.key
        involved: dict[str, str] = {"apiVersion": key.api_version, "kind": key.kind, "name": key.name}
        if key.namespace:
            involved["namespace"] = key.namespace
        if key.uid:
            involved["uid"] = key.uid
        source: dict[str, str] = {"component": self._component}
        if self._host:
            source["host"] = self._host
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved,
            "type": key.type,
            "reason": key.reason,
            "message": key.message,
            "source": source,
            "count": write.count,
            "firstTimestamp": _timestamp(write.first_seen),
            "lastTimestamp": _timestamp(write.last_seen),
            "reportingComponent": self._component,
            "reportingInstance": self._host or "",
        }
