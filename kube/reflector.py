"""Keep a ``Store`` in step with the API server: list, then watch; relist when the watch expires.

The loop (after client-go's Reflector and kopf's continuous watch):

1. List every page; replace the store; tell the handlers what changed compared with the previous
   contents (ADDED, MODIFIED when the resourceVersion differs, DELETED for keys that vanished, so
   deletions missed during a gap are never lost). The store is then *synced*.
2. Watch from the list's resourceVersion with bookmarks and a server-side timeout; every event,
   bookmarks included, advances the resourceVersion. When the server ends the stream, watch again
   from there.
3. ``410 Gone`` (the resourceVersion was compacted): go back to 1 at once.
4. Any other failure: log it, back off exponentially with jitter, then retry the step that failed.
   Failures only count as healed by a healthy watch, so a server that answers every watch with
   410, or ends every watch at once, is retried with growing delays rather than in a tight loop.
5. A watch that delivers nothing (no event, no bookmark) for ``stall_timeout`` seconds is a dead
   connection: it is logged as a warning, counted, and restarted -- never silent.

Public API:

- ``Handler = Callable[[str, dict, dict | None], None]`` -- ``(event_type, obj, old)``; the event type
  is ADDED, MODIFIED or DELETED; ``old`` is the previous cached object or ``None``. For DELETED
  ``obj`` is the final state (for a deletion found by a relist, the last cached state). Handlers run
  synchronously on the event loop and must be quick (typically: enqueue a key); an exception in a
  handler is logged and does not stop the reflector.
- ``Reflector(api, res, store, *, namespace=None, label_selector=None, field_selector=None,
  handlers=(), watch_timeout_seconds=290, stall_timeout=None, page_size=500, backoff_base=0.5,
  backoff_max=30.0, transform=None, metadata_only=False, first_list_from_cache=False)`` --
  ``stall_timeout`` defaults to ``watch_timeout_seconds + 15``; ``transform`` is applied to every
  listed and watched object before it is stored or handed to the handlers (client-go's
  ``SetTransform``), so a cache keeps only what its readers need; ``metadata_only`` lists and
  watches the objects' metadata alone (client-go's metadata informers), for a cache that keeps no
  more, so the server never sends the rest.
  ``first_list_from_cache`` asks the first list at resourceVersion "0" (client-go's first list):
  kube-apiserver answers it from its watch cache in one answer (``limit`` ignored) instead of
  reading every page from etcd, which is most of a restart's time with tens of thousands of
  objects; the answer may be a little older than etcd, and the watch from its resourceVersion
  brings the rest. Only for a resource whose whole list fits in one answer (``MAX_BODY``).
  - ``async run()`` -- runs until cancelled.
  - ``add_handler(handler)``; ``synced`` and ``async wait_synced()``; ``resource_version``;
    ``list_count`` (lists done), ``stall_count``; ``last_error`` (``None`` once a step succeeds).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Sequence
from typing import Any

from kube.api import KubeApi, Transform, WatchEvent
from kube.errors import ApiError, Forbidden, Gone, Unauthorized
from kube.resources import Resource
from kube.store import Store, object_key

__all__ = ["Handler", "Reflector"]

logger = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, Any], dict[str, Any] | None], None]


# A watch that lasted this long was a real watch even if nothing happened during it.
_HEALTHY_WATCH_SECONDS = 1.0


class _WatchStalled(Exception):
    pass


def _has_name(obj: dict[str, Any]) -> bool:
    metadata = obj.get("metadata")
    return isinstance(metadata, dict) and bool(metadata.get("name"))


def _resource_version(obj: dict[str, Any]) -> str | None:
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and metadata.get("resourceVersion"):
        return str(metadata["resourceVersion"])
    return None


class Reflector:
    def __init__(
        self,
        api: KubeApi,
        res: Resource,
        store: Store,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        handlers: Sequence[Handler] = (),
        watch_timeout_seconds: int = 290,
        stall_timeout: float | None = None,
        page_size: int = 500,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        transform: Transform | None = None,
        metadata_only: bool = False,
        first_list_from_cache: bool = False,
    ) -> None:
        if watch_timeout_seconds <= 0:
            raise ValueError("watch_timeout_seconds must be positive")
        if namespace is not None and not res.namespaced:
            raise ValueError(f"{res} is cluster-scoped: cannot watch one namespace")
        self._api = api
        self._res = res
        self._store = store
        self._namespace = namespace
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._handlers: list[Handler] = list(handlers)
        self._watch_timeout = watch_timeout_seconds
        self._stall_timeout = stall_timeout if stall_timeout is not None else watch_timeout_seconds + 15.0
        self._page_size = page_size
        self._backoff_base = backoff_base
        self._backoff_max = backoff_max
        self._transform = transform
        self._metadata_only = metadata_only
        self._first_list_from_cache = first_list_from_cache
        self._synced = asyncio.Event()
        self._resource_version = ""
        self._list_count = 0
        self._stall_count = 0
        self._last_error: BaseException | None = None
        self._describe = f"{res}" + (f" in {namespace}" if namespace else "")

    # -- observation -------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        return self._store

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    @property
    def resource_version(self) -> str:
        return self._resource_version

    @property
    def list_count(self) -> int:
        return self._list_count

    @property
    def stall_count(self) -> int:
        return self._stall_count

    @property
    def last_error(self) -> BaseException | None:
        return self._last_error

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    # -- the loop ----------------------------------------------------------------------------

    async def run(self) -> None:
        need_list = True
        failures = 0
        while True:
            try:
                if need_list:
                    await self._list_and_replace()
                    need_list = False
                if await self._watch_once():
                    failures = 0
                else:
                    # A server that ends every watch at once must not turn this loop into a spin.
                    failures += 1
                    delay = self._backoff(failures)
                    logger.warning("watch of %s ended at once without any event; watching again in %.2fs",
                                   self._describe, delay)
                    await asyncio.sleep(delay)
            except Gone:
                logger.info("watch of %s expired at resourceVersion %s; relisting",
                            self._describe, self._resource_version)
                failures += 1
                need_list = True
                if failures > 1:  # 410 again before any healthy watch: do not spin against the server
                    await asyncio.sleep(self._backoff(failures - 1))
            except _WatchStalled:
                self._stall_count += 1
                logger.warning("watch of %s stalled: nothing received for %.1fs; restarting it",
                               self._describe, self._stall_timeout)
            except Exception as exc:
                self._last_error = exc
                failures += 1
                delay = self._backoff(failures)
                retry_after = exc.retry_after if isinstance(exc, ApiError) else None
                if retry_after:
                    delay = max(delay, retry_after)
                self._log_failure("list" if need_list else "watch", exc, delay)
                await asyncio.sleep(delay)

    def _log_failure(self, step: str, exc: Exception, delay: float) -> None:
        if isinstance(exc, ApiError):
            # 401/403 will not heal by retrying: RBAC or credentials are broken, say so loudly.
            level = logging.ERROR if isinstance(exc, Unauthorized | Forbidden) else logging.WARNING
            logger.log(level, "%s of %s failed (%s); retrying in %.2fs", step, self._describe, exc, delay)
        else:  # a bug or a malformed answer: keep the traceback, keep the cache alive
            logger.exception("%s of %s failed unexpectedly; retrying in %.2fs", step, self._describe, delay)

    def _backoff(self, failures: int) -> float:
        delay = min(self._backoff_max, self._backoff_base * 2.0 ** min(max(0, failures - 1), 30))
        return delay * random.uniform(0.5, 1.0)

    async def _list_and_replace(self) -> None:
        # The first list may come from the API server's watch cache (resourceVersion "0", as
        # client-go's reflector asks): no read of etcd, in one answer. A relist follows a 410 or a
        # gap, where an answer older than what this store already saw would go back in time: it
        # reads etcd, page by page.
        from_cache = self._first_list_from_cache and not self._synced.is_set()
        listed, resource_version = await self._api.list_all(
            self._res, self._namespace, label_selector=self._label_selector,
            field_selector=self._field_selector, page_size=self._page_size, transform=self._transform,
            metadata_only=self._metadata_only, resource_version="0" if from_cache else None,
        )
        items = [obj for obj in listed if _has_name(obj)]
        if len(items) != len(listed):
            logger.warning("ignoring %d listed %s without a name", len(listed) - len(items), self._describe)
        previous = self._store.replace(items)
        self._resource_version = resource_version
        self._list_count += 1
        self._last_error = None
        for obj in items:
            old = previous.pop(object_key(obj), None)
            if old is None:
                self._notify("ADDED", obj, None)
            elif _resource_version(old) != _resource_version(obj):
                self._notify("MODIFIED", obj, old)
        for old in previous.values():
            self._notify("DELETED", old, old)
        if not self._synced.is_set():
            logger.info("%s synced: %d objects at resourceVersion %s",
                        self._describe, len(items), resource_version)
            self._synced.set()
        else:
            logger.debug("%s relisted: %d objects at resourceVersion %s",
                         self._describe, len(items), resource_version)

    async def _watch_once(self) -> bool:
        """Watch until the server ends the stream; True if the watch was healthy (it delivered
        something or lasted a while), False if it ended at once with nothing."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        received = 0
        stall = self._stall_timeout
        last_event = started
        check: asyncio.TimerHandle | None = None

        def on_event(event: WatchEvent) -> None:
            # Called inside the stream's read, for every event the read brought: the reflector's
            # task is not woken per event.
            nonlocal last_event, received
            last_event = loop.time()
            self._last_error = None
            received += 1
            self._apply(event)

        try:
            async with asyncio.timeout(None) as deadline:
                # One timer per stall period, not a rescheduled deadline per event (moving
                # asyncio's deadline on every event was 1 % of a burst's samples): when it
                # fires it either expires the deadline or waits for the last event's period.
                def check_stalled() -> None:
                    nonlocal check
                    now = loop.time()
                    if now - last_event >= stall:
                        deadline.reschedule(now)
                    else:
                        check = loop.call_at(last_event + stall, check_stalled)

                check = loop.call_at(started + stall, check_stalled)
                await self._api.watch_into(
                    self._res, self._namespace, resource_version=self._resource_version,
                    timeout_seconds=self._watch_timeout, on_event=on_event, allow_bookmarks=True,
                    label_selector=self._label_selector, field_selector=self._field_selector,
                    metadata_only=self._metadata_only,
                )
        except TimeoutError:
            if deadline.expired():
                raise _WatchStalled() from None
            raise
        finally:
            if check is not None:
                check.cancel()
        return received > 0 or loop.time() - started >= _HEALTHY_WATCH_SECONDS

    def _apply(self, event: WatchEvent) -> None:
        obj = event.object
        resource_version = _resource_version(obj)
        if event.type == "BOOKMARK":
            if resource_version:
                self._resource_version = resource_version
            return
        obj.setdefault("apiVersion", self._res.api_version)
        obj.setdefault("kind", self._res.kind)
        if self._transform is not None:
            obj = self._transform(obj)
        try:
            key = object_key(obj)
        except ValueError:
            logger.warning("ignoring %s event without a name for %s", event.type, self._describe)
            return
        if event.type == "DELETED":
            old = self._store.delete(key)
        else:
            old = self._store.upsert(obj)
        if resource_version:
            self._resource_version = resource_version
        self._notify(event.type, obj, old)

    def _notify(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        for handler in self._handlers:
            try:
                handler(event_type, obj, old)
            except Exception:
                logger.exception("handler %r failed on %s of %s", handler, event_type, self._describe)
