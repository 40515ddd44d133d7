"""Our own recent writes, laid over a watch cache that has not caught up with them yet.

After binding a pod or writing a PodGroup status, the reflector's copy stays stale until the watch
event arrives. A session that ran on the stale copy would bind the pod again or undo a phase. So
each write is remembered with the resourceVersion it replaced: while the cache still holds that
version, the written object is used instead; once the cache moves on, the entry is dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any


def _version(obj: Mapping[str, Any] | None) -> str:
    if not obj:
        return ""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class WriteOverlay:
    def __init__(self, ttl: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._entries: dict[str, tuple[str, dict[str, Any], float]] = {}

    def remember(self, key: str, replaced: Mapping[str, Any], written: dict[str, Any]) -> None:
        self._entries[key] = (_version(replaced), written, self._clock())

    def view(self, key: str, cached: dict[str, Any]) -> dict[str, Any]:
        entry = self._entries.get(key)
        if entry is None:
            return cached
        stale_version, written, since = entry
        if _version(cached) != stale_version or self._clock() - since > self._ttl:
            del self._entries[key]
            return cached
        return written

    def __len__(self) -> int:
        return len(self._entries)
