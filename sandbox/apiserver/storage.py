"""Objects by resource, namespace and name; one global resourceVersion; watch fan-out with history.

Everything runs on one event loop, so no locks: a write and the events it emits are atomic. Stored
objects are never mutated after they are stored (writers store fresh dicts), which lets watch
events share them without copying.
"""

from __future__ import annotations

import asyncio
import bisect
import enum
import json
import logging
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sandbox.apiserver import errors
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.registry import StorageKey

logger = logging.getLogger(__name__)


# Events kept for resuming watches; each holds an object version alive, so this bounds memory too.
DEFAULT_WATCH_WINDOW = 20_000


@dataclass
class StoredEvent:
    """One change. ``previous`` lets a filtered watch turn a MODIFIED into ADDED or DELETED."""

    type: str
    key: StorageKey
    namespace: str
    object: JsonObj
    previous: JsonObj | None
    resource_version: int
    _encoded: bytes | None = None

    def encoded(self) -> bytes:
        """The watch line for this event, serialized once however many watchers receive it."""
        if self._encoded is None:
            self._encoded = (
                json.dumps({"type": self.type, "object": self.object}, separators=(",", ":")).encode() + b"\n"
            )
        return self._encoded


class Tick(enum.Enum):
    """Timer marks a watch puts in its own queue, so that waiting for events needs no timeout."""

    BOOKMARK = "bookmark"
    DEADLINE = "deadline"


@dataclass(frozen=True)
class TimerMark:
    """A tick as queued, with the revision the storage had then.

    A bookmark must not claim more than the watcher was sent: every event up to ``revision`` is
    ahead of the mark in the queue, but events queued after it are not, and a watch that ends at
    the mark never sends them. A client resuming from the storage's revision at the time the
    mark is *rendered* would miss them for good.
    """

    tick: Tick
    revision: int


# An event, the error that ends the watch, a timer mark, or None when the server closes watches.
QueueItem = StoredEvent | errors.ApiError | TimerMark | None


@dataclass(eq=False)
class Watcher:
    key: StorageKey
    namespace: str | None
    queue: asyncio.Queue[QueueItem] = field(default_factory=asyncio.Queue)

    def wants(self, event: StoredEvent) -> bool:
        return self.namespace is None or event.namespace == self.namespace


@dataclass(frozen=True)
class ObjectRef:
    key: StorageKey
    namespace: str
    name: str


class Storage:
    def __init__(self, watch_window: int = DEFAULT_WATCH_WINDOW) -> None:
        self._revision = 1
        self._objects: dict[StorageKey, dict[str, dict[str, JsonObj]]] = {}
        # Every (namespace, name) of a kind in order, kept until one is added or removed: a list
        # read page by page (the controller's, 500 at a time) then sorts once, not once a page.
        self._order: dict[StorageKey, list[tuple[str, str]]] = {}
        self._history: deque[StoredEvent] = deque()
        self._window = max(1, watch_window)
        self._oldest_watchable = 1
        self._watchers: dict[StorageKey, set[Watcher]] = {}
        self._by_uid: dict[str, ObjectRef] = {}
        self._dependents: dict[str, set[ObjectRef]] = {}
        self.listeners: list[Callable[[StoredEvent], None]] = []
        # id(object) -> (object, its JSON): only current objects, dropped when they are replaced.
        self._encodings: dict[int, tuple[JsonObj, bytes]] = {}

    @property
    def oldest_watchable(self) -> int:
        return self._oldest_watchable

    @property
    def revision(self) -> int:
        return self._revision

    def next_revision(self) -> int:
        self._revision += 1
        return self._revision

    # --- reads -----------------------------------------------------------------------------------
    def get(self, key: StorageKey, namespace: str, name: str) -> JsonObj | None:
        return self._objects.get(key, {}).get(namespace, {}).get(name)

    def list_in(
        self, key: StorageKey, namespace: str | None, after: tuple[str, str] | None = None
    ) -> list[JsonObj]:
        """The objects of ``key`` in ``namespace`` (None: every namespace) in (namespace, name)
        order, from the first one past ``after``."""
        buckets = self._objects.get(key, {})
        order = self._order.get(key)
        if order is None:
            order = self._order[key] = sorted((ns, name) for ns, bucket in buckets.items() for name in bucket)
        start, end = 0, len(order)
        if namespace is not None:
            # (ns,) sorts before every (ns, name); ns + NUL after them and before any later namespace.
            start = bisect.bisect_left(order, (namespace,))
            end = bisect.bisect_left(order, (namespace + "\0",), start)
        if after is not None:
            start = max(start, bisect.bisect_right(order, after, start, end))
        return [buckets[ns][name] for ns, name in order[start:end]]

    def encoded(self, obj: JsonObj) -> bytes:
        """The JSON of a current stored object, encoded once per version."""
        entry = self._encodings.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        data = json.dumps(obj, separators=(",", ":")).encode()
        self._encodings[id(obj)] = (obj, data)
        return data

    def count(self, key: StorageKey, namespace: str | None = None) -> int:
        buckets = self._objects.get(key, {})
        if namespace is not None:
            return len(buckets.get(namespace, {}))
        return sum(len(bucket) for bucket in buckets.values())

    def namespaces_with_objects(self, namespace: str) -> Iterator[StorageKey]:
        for key, buckets in self._objects.items():
            if buckets.get(namespace):
                yield key

    def by_uid(self, uid: str) -> ObjectRef | None:
        return self._by_uid.get(uid)

    def dependents_of(self, uid: str) -> list[ObjectRef]:
        return sorted(
            self._dependents.get(uid, ()), key=lambda ref: (ref.key.resource, ref.namespace, ref.name)
        )

    # --- writes ----------------------------------------------------------------------------------
    def put(self, key: StorageKey, obj: JsonObj, event_type: str) -> JsonObj:
        """Store ``obj`` (ADDED or MODIFIED), stamping a new resourceVersion. ``obj`` must be fresh."""
        meta: JsonObj = obj.setdefault("metadata", {})
        namespace = str(meta.get("namespace") or "")
        name = str(meta["name"])
        bucket = self._objects.setdefault(key, {}).setdefault(namespace, {})
        previous = bucket.get(name)
        if previous is None:
            self._order.pop(key, None)
        revision = self.next_revision()
        meta["resourceVersion"] = str(revision)
        bucket[name] = obj
        ref = ObjectRef(key, namespace, name)
        if previous is not None:
            self._unindex(previous, ref)
            self._encodings.pop(id(previous), None)
        self._index(obj, ref)
        event = StoredEvent(event_type, key, namespace, obj, previous, revision)
        if self._watchers.get(key):
            # The object is current now: its one encoding serves this event and later lists alike.
            event._encoded = b'{"type":"%s","object":%s}\n' % (event_type.encode(), self.encoded(obj))
        self._emit(event)
        return obj

    def remove(self, key: StorageKey, namespace: str, name: str) -> JsonObj | None:
        bucket = self._objects.get(key, {}).get(namespace)
        if not bucket or name not in bucket:
            return None
        previous = bucket.pop(name)
        self._order.pop(key, None)
        if not bucket:
            del self._objects[key][namespace]
        ref = ObjectRef(key, namespace, name)
        self._unindex(previous, ref)
        self._encodings.pop(id(previous), None)
        revision = self.next_revision()
        # The DELETED event carries the object's last state with the deletion's resourceVersion.
        final = dict(previous)
        final["metadata"] = dict(previous.get("metadata") or {}, resourceVersion=str(revision))
        self._emit(StoredEvent("DELETED", key, namespace, final, previous, revision))
        return final

    def _index(self, obj: JsonObj, ref: ObjectRef) -> None:
        meta = obj.get("metadata") or {}
        uid = meta.get("uid")
        if uid:
            self._by_uid[uid] = ref
        for owner in meta.get("ownerReferences") or []:
            owner_uid = owner.get("uid")
            if owner_uid:
                self._dependents.setdefault(owner_uid, set()).add(ref)

    def _unindex(self, obj: JsonObj, ref: ObjectRef) -> None:
        meta = obj.get("metadata") or {}
        uid = meta.get("uid")
        if uid and self._by_uid.get(uid) == ref:
            del self._by_uid[uid]
        for owner in meta.get("ownerReferences") or []:
            dependents = self._dependents.get(owner.get("uid", ""))
            if dependents is not None:
                dependents.discard(ref)
                if not dependents:
                    del self._dependents[owner["uid"]]

    # --- watch -----------------------------------------------------------------------------------
    def _emit(self, event: StoredEvent) -> None:
        self._history.append(event)
        while len(self._history) > self._window:
            dropped = self._history.popleft()
            self._oldest_watchable = dropped.resource_version
        for watcher in self._watchers.get(event.key, ()):
            if watcher.wants(event):
                watcher.queue.put_nowait(event)
        for listener in self.listeners:
            listener(event)

    def compact(self) -> None:
        """Forget the watch history: watches from any earlier resourceVersion now get 410 Gone.

        Open watches end with a 410 ERROR event too (after the events already sent to them), as
        when a client falls out of kube-apiserver's watch window, so clients must relist.
        """
        self._history.clear()
        self._oldest_watchable = self._revision
        expired = errors.gone(f"too old resource version: {self._revision} ({self._revision + 1})")
        for watchers in self._watchers.values():
            for watcher in watchers:
                watcher.queue.put_nowait(expired)

    def set_window(self, window: int) -> None:
        self._window = max(1, window)

    def watch(
        self, key: StorageKey, namespace: str | None, since: int | None
    ) -> tuple[Watcher, list[StoredEvent]]:
        """Register a watcher; return it with the history after ``since`` (None: no replay).

        Raises 410 Gone when ``since`` is older than the retained history.
        """
        replay: list[StoredEvent] = []
        if since is not None:
            if since < self._oldest_watchable:
                raise errors.gone(f"too old resource version: {since} ({self._oldest_watchable})")
            watcher_probe = Watcher(key, namespace)
            replay = [
                event
                for event in self._history
                if event.resource_version > since and event.key == key and watcher_probe.wants(event)
            ]
        watcher = Watcher(key, namespace)
        self._watchers.setdefault(key, set()).add(watcher)
        return watcher, replay

    def unwatch(self, watcher: Watcher) -> None:
        watchers = self._watchers.get(watcher.key)
        if watchers is not None:
            watchers.discard(watcher)

    def close_all_watches(self) -> None:
        for watchers in self._watchers.values():
            for watcher in watchers:
                watcher.queue.put_nowait(None)

    def watcher_count(self) -> int:
        return sum(len(w) for w in self._watchers.values())
