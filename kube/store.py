"""An in-memory cache of raw objects keyed by ``namespace/name``, with secondary indexes.

Objects in the store are shared: treat them as read-only (deep-copy before changing one). The
store is filled by a ``Reflector`` and used from one event loop, so it needs no locking.

Public API:

- ``object_key(obj) -> str`` -- ``"namespace/name"``, or ``"name"`` for cluster-scoped objects.
- ``split_key(key) -> tuple[str | None, str]`` -- the inverse.
- ``IndexFunc = Callable[[dict], Iterable[str]]``; built-in index functions:
  ``by_owner_uid(obj)`` (the uid of the controller ownerReference) and ``by_label(key)`` (returns an
  index function yielding that label's value).
- ``Store()``:
  ``get(key)``, ``list()``, ``keys()``, ``len()``, ``key in store``,
  ``add_index(name, fn)`` (allowed at any time; existing objects are indexed at once),
  ``by_index(name, value) -> list[dict]``, ``index_keys(name, value) -> list[str]``;
  writers (used by the reflector): ``upsert(obj) -> old | None``, ``delete(key) -> old | None``,
  ``replace(objs) -> dict[str, dict]`` (the previous contents, by key).
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from kubeobjects.meta import Meta

__all__ = ["IndexFunc", "Store", "by_label", "by_owner_uid", "object_key", "split_key"]

IndexFunc = Callable[[dict[str, Any]], Iterable[str]]

logger = logging.getLogger(__name__)


def object_key(obj: Mapping[str, Any]) -> str:
    meta = Meta(obj)
    if not meta.name:
        raise ValueError("object has no metadata.name")
    return meta.key


def split_key(key: str) -> tuple[str | None, str]:
    namespace, sep, name = key.partition("/")
    return (namespace, name) if sep else (None, key)


def by_owner_uid(obj: dict[str, Any]) -> list[str]:
    """The uid of the object's controlling owner (ownerReference with ``controller: true``)."""
    uid = Meta(obj).controller_uid
    return [uid] if uid else []


def by_label(label_key: str) -> IndexFunc:
    """An index function yielding the value of one label, when present."""

    def index(obj: dict[str, Any]) -> list[str]:
        value = Meta(obj).labels.get(label_key)
        return [str(value)] if value is not None else []

    index.__name__ = f"by_label[{label_key}]"
    return index


class Store:
    def __init__(self) -> None:
        self._items: dict[str, dict[str, Any]] = {}
        self._index_funcs: dict[str, IndexFunc] = {}
        # index name -> value -> keys, and index name -> key -> values (for removal)
        self._indexes: dict[str, dict[str, set[str]]] = {}
        self._indexed_values: dict[str, dict[str, tuple[str, ...]]] = {}

    # -- reading -----------------------------------------------------------------------------

    def get(self, key: str) -> dict[str, Any] | None:
        return self._items.get(key)

    def list(self) -> builtins.list[dict[str, Any]]:
        return list(self._items.values())

    def keys(self) -> builtins.list[str]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def add_index(self, name: str, fn: IndexFunc) -> None:
        if name in self._index_funcs:
            raise ValueError(f"index {name!r} already exists")
        self._index_funcs[name] = fn
        self._indexes[name] = {}
        self._indexed_values[name] = {}
        for key, obj in self._items.items():
            self._index_one(name, key, obj)

    def index_keys(self, name: str, value: str) -> builtins.list[str]:
        try:
            index = self._indexes[name]
        except KeyError:
            raise KeyError(f"no index named {name!r}") from None
        return sorted(index.get(value, ()))

    def by_index(self, name: str, value: str) -> builtins.list[dict[str, Any]]:
        return [self._items[key] for key in self.index_keys(name, value)]

    # -- writing -----------------------------------------------------------------------------

    def upsert(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        key = object_key(obj)
        old = self._items.get(key)
        if old is not None:
            self._unindex(key)
        self._items[key] = obj
        for name in self._index_funcs:
            self._index_one(name, key, obj)
        return old

    def delete(self, key: str) -> dict[str, Any] | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key)
        return old

    def replace(self, objs: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        previous = self._items
        self._items = {}
        for name in self._index_funcs:
            self._indexes[name] = {}
            self._indexed_values[name] = {}
        for obj in objs:
            self.upsert(obj)
        return previous

    # -- indexing ----------------------------------------------------------------------------

    def _index_one(self, name: str, key: str, obj: dict[str, Any]) -> None:
        try:
            values = tuple(dict.fromkeys(self._index_funcs[name](obj)))
        except Exception:
            # A broken index function must not corrupt the cache: the object stays unindexed.
            logger.exception("index %s failed on %s", name, key)
            return
        if not values:
            return
        self._indexed_values[name][key] = values
        index = self._indexes[name]
        for value in values:
            index.setdefault(value, set()).add(key)

    def _unindex(self, key: str) -> None:
        for name, values_by_key in self._indexed_values.items():
            values = values_by_key.pop(key, ())
            index = self._indexes[name]
            for value in values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
