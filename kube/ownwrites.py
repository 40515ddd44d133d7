"""Read-your-writes over watch-fed caches: a client's own writes, until the watch reports them.

A watch event arrives some time after the write that caused it. A pass that runs in between and
reads only the cache would see a missing pod and create a second one, or see the old status and
write it again (the controller), or bind a pod twice or undo a PodGroup phase (the sandbox's
scheduler). So every successful write is remembered here, keyed by resource, namespace and name,
and laid over the cached objects when a pass reads them:

- a created or patched object replaces the cached one until the cache holds that version (same
  uid, resourceVersion at least as new) or the object is reported deleted;
- an assumed object (what a write implies for the cached one when the API does not answer with
  the object, as a pod binding does) replaces the cached one until the cache moves past the
  version it was assumed from;
- a deleted object stays visible as terminating (``deletionTimestamp`` set, as the API server
  shows a pod during its grace period) until the cache stops holding that uid.

An entry the watch never confirms (a relist that skipped its events, a lost stream) expires after
``ttl`` seconds, after which the cache is trusted again.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubeobjects.meta import Meta
from kubeobjects.times import format_time

Obj = dict[str, Any]
Key = tuple[str, str, str]  # (resource, namespace, name)


def _key(resource: str, obj: Mapping[str, Any]) -> Key:
    meta = Meta(obj)
    return (resource, meta.namespace, meta.name)


def version_at_least(candidate: str, reference: str) -> bool:
    """Whether resourceVersion ``candidate`` is ``reference`` or later.

    resourceVersions are opaque in general; every server we talk to (etcd-backed kube-apiserver,
    the sandbox) uses integers, so they are compared as such, and otherwise only equality counts.
    """
    if candidate.isdigit() and reference.isdigit():
        return int(candidate) >= int(reference)
    return candidate == reference


def version_after(candidate: str, reference: str) -> bool:
    """Whether resourceVersion ``candidate`` is later than ``reference`` (any other, if not integers)."""
    if candidate.isdigit() and reference.isdigit():
        return int(candidate) > int(reference)
    return candidate != reference


@dataclass(frozen=True)
class _Entry:
    written: Obj | None  # None: our delete
    uid: str
    resource_version: str
    owner_uid: str
    at: float
    assumed: bool = False  # ``written`` is projected from the cached object at ``resource_version``

    def superseded_by(self, version: str) -> bool:
        if self.assumed:
            return version_after(version, self.resource_version)
        return version_at_least(version, self.resource_version)

    def apply(self, cached: Obj | None) -> Obj | None:
        if self.written is None:
            meta = Meta(cached)
            if cached is None or meta.uid != self.uid or meta.deleting:
                return cached
            terminating = copy.copy(cached)
            terminating["metadata"] = dict(meta.raw)
            terminating["metadata"]["deletionTimestamp"] = format_time(datetime.now(UTC))
            return terminating
        meta = Meta(cached)
        if cached is not None and meta.uid == self.uid and self.superseded_by(meta.resource_version):
            return cached
        return self.written


class OwnWrites:
    """A client's writes not yet seen by its watches (see the module docstring)."""

    def __init__(self, ttl: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._entries: dict[Key, _Entry] = {}
        self._by_owner: dict[tuple[str, str], set[Key]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def _put(self, key: Key, entry: _Entry) -> None:
        self._drop(key)
        self._entries[key] = entry
        if entry.owner_uid:
            self._by_owner.setdefault((key[0], entry.owner_uid), set()).add(key)

    def _drop(self, key: Key) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None and entry.owner_uid:
            keys = self._by_owner.get((key[0], entry.owner_uid))
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_owner[(key[0], entry.owner_uid)]

    def wrote(self, resource: str, obj: Mapping[str, Any], *, assumed: bool = False) -> None:
        """Remember an object the API returned from a create, patch or replace.

        ``assumed``: ``obj`` is the cached object as a write changed it (same resourceVersion), used
        until the cache holds a later version.
        """
        meta = Meta(obj)
        self._put(
            _key(resource, obj),
            _Entry(
                written=dict(obj),
                uid=meta.uid,
                resource_version=meta.resource_version,
                owner_uid=meta.controller_uid,
                at=self._clock(),
                assumed=assumed,
            ),
        )

    def deleted(self, resource: str, namespace: str, name: str, uid: str, owner_uid: str = "") -> None:
        """Remember that we deleted the object ``uid`` (or that it was already gone)."""
        self._put((resource, namespace, name), _Entry(None, uid, "", owner_uid, self._clock()))

    def observe(self, resource: str, event_type: str, obj: Mapping[str, Any]) -> bool:
        """Forget an entry once a watch event shows the cache caught up with it.

        True when the event is exactly our own write coming back (same uid and resourceVersion):
        the pass that wrote it already planned with that object, so it brings nothing new.
        """
        key = _key(resource, obj)
        entry = self._entries.get(key)
        if entry is None:
            return False
        meta = Meta(obj)
        uid = meta.uid
        if entry.written is None:
            if uid != entry.uid or event_type == "DELETED":
                self._drop(key)
            return False
        if uid != entry.uid:
            return False
        version = meta.resource_version
        if event_type == "DELETED" or entry.superseded_by(version):
            self._drop(key)
            return event_type != "DELETED" and not entry.assumed and version == entry.resource_version
        return False

    def _live(self, key: Key) -> _Entry | None:
        entry = self._entries.get(key)
        if entry is not None and self._clock() - entry.at > self._ttl:
            self._drop(key)
            return None
        return entry

    def view(self, resource: str, namespace: str, name: str, cached: Obj | None) -> Obj | None:
        """The object as its writer should see it: the cache, corrected by our own writes."""
        entry = self._live((resource, namespace, name))
        return cached if entry is None else entry.apply(cached)

    def view_owned(self, resource: str, owner_uid: str, cached: Iterable[Obj]) -> list[Obj]:
        """The children of ``owner_uid`` as their writer should see them."""
        by_key: dict[Key, Obj | None] = {}
        for obj in cached:
            by_key[_key(resource, obj)] = obj
        for key in list(self._by_owner.get((resource, owner_uid), ())):
            entry = self._live(key)
            if entry is not None:
                by_key[key] = entry.apply(by_key.get(key))
        return [obj for obj in by_key.values() if obj is not None]

    def forget_owner(self, owner_uid: str) -> None:
        """Drop every entry about the children of a job that is gone."""
        for resource, uid in [key for key in self._by_owner if key[1] == owner_uid]:
            for key in list(self._by_owner.get((resource, uid), ())):
                self._drop(key)
