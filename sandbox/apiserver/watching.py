"""``watch=true``: initial events, history replay from a resourceVersion, selector-aware event types,
bookmarks, ``timeoutSeconds``, and the 410 ERROR event when the version is too old."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sandbox.apiserver import errors, objects, representation, tables
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.registry import ResourceInfo
from sandbox.apiserver.state import ApiState
from sandbox.apiserver.storage import QueueItem, StoredEvent, Tick, TimerMark

logger = logging.getLogger(__name__)

Writer = Callable[[bytes], Awaitable[None]]

DEFAULT_WATCH_TIMEOUT = 1800.0


@dataclass(frozen=True)
class WatchRequest:
    info: ResourceInfo
    namespace: str | None
    matches: Callable[[JsonObj], bool] | None
    resource_version: str
    timeout: float
    bookmarks: bool
    send_initial_events: bool
    form: representation.Wanted
    include_object: str


def _line(event_type: str, obj: JsonObj) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


class WatchStream:
    def __init__(self, state: ApiState, request: WatchRequest, write: Writer) -> None:
        self.state = state
        self.request = request
        self.write = write
        self._columns_sent = False
        # Without selectors, conversion or transformed forms, every watcher can share one encoding per event.
        self._shared_encoding = (
            request.matches is None
            and request.form.form is representation.Form.OBJECT
            and request.info.storage is None
        )

    def _render(self, event_type: str, obj: JsonObj) -> bytes:
        info = self.request.info
        shown = objects.served(info, obj)
        if self.request.form.form is representation.Form.METADATA:
            return _line(event_type, representation.partial_metadata(shown, self.request.form.version))
        if self.request.form.table:
            list_meta = {"resourceVersion": str((obj.get("metadata") or {}).get("resourceVersion", ""))}
            table = tables.build_table(
                info,
                [shown],
                list_meta,
                self.request.include_object,
                self.state.now(),
                with_columns=not self._columns_sent,
            )
            self._columns_sent = True
            return _line(event_type, table)
        return _line(event_type, shown)

    def _event_line(self, event: StoredEvent) -> bytes | None:
        matches = self.request.matches
        event_type = event.type
        if matches is not None:
            now_matches = event.type != "DELETED" and matches(event.object)
            before = event.previous is not None and event.type != "ADDED" and matches(event.previous)
            if event.type == "DELETED":
                now_matches, before = False, matches(event.object)
            if now_matches and before:
                event_type = "MODIFIED"
            elif now_matches:
                event_type = "ADDED"
            elif before:
                event_type = "DELETED"
            else:
                return None
        if (
            self._shared_encoding
            and event_type == event.type
            and event.object.get("apiVersion") == self.request.info.api_version
        ):
            return event.encoded()
        return self._render(event_type, event.object)

    def _bookmark(self, revision: int, initial_events_end: bool = False) -> bytes:
        """A bookmark at ``revision``: every event up to it has been sent to this watcher."""
        info = self.request.info
        meta: JsonObj = {"resourceVersion": str(revision)}
        if initial_events_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        bookmark = {"kind": info.kind, "apiVersion": info.api_version, "metadata": meta}
        if self.request.form.form is representation.Form.METADATA:
            bookmark = representation.partial_metadata(bookmark, self.request.form.version)
        return _line("BOOKMARK", bookmark)

    async def run(self) -> None:
        request = self.request
        storage = self.state.storage
        since: int | None = None
        initial: list[JsonObj] = []
        if request.resource_version not in ("", "0") and not request.send_initial_events:
            try:
                since = int(request.resource_version)
            except ValueError:
                await self.write(
                    _line(
                        "ERROR",
                        errors.ApiError(
                            400, "BadRequest", f"invalid resource version: {request.resource_version}"
                        ).body(),
                    )
                )
                return
        try:
            watcher, replay = storage.watch(request.info.storage_key, request.namespace, since)
        except errors.ApiError as error:
            await self.write(_line("ERROR", error.body()))
            return
        try:
            if since is None:
                initial = storage.list_in(request.info.storage_key, request.namespace)
                listed_at = storage.revision  # events after it are queued, not yet sent
                for obj in initial:
                    if request.matches is None or request.matches(obj):
                        await self.write(self._render("ADDED", obj))
                if request.send_initial_events and request.bookmarks:
                    await self.write(self._bookmark(listed_at, initial_events_end=True))
            for event in replay:
                line = self._event_line(event)
                if line is not None:
                    await self.write(line)
            await self._follow(watcher.queue)
        finally:
            storage.unwatch(watcher)

    async def _follow(self, queue: asyncio.Queue[QueueItem]) -> None:
        loop = asyncio.get_running_loop()
        storage = self.state.storage

        def mark(tick: Tick) -> None:
            queue.put_nowait(TimerMark(tick, storage.revision))

        timers = [loop.call_later(self.request.timeout, mark, Tick.DEADLINE)]
        if self.request.bookmarks:

            def bookmark() -> None:
                mark(Tick.BOOKMARK)
                timers.append(loop.call_later(self.state.bookmark_interval, bookmark))

            timers.append(loop.call_later(self.state.bookmark_interval, bookmark))
        try:
            while True:
                batch: list[bytes] = []
                keep_going = self._render_item(await queue.get(), batch)
                while keep_going and not queue.empty():
                    keep_going = self._render_item(queue.get_nowait(), batch)
                if batch:
                    # One write per wake-up: a burst of events costs one transport write per watcher.
                    await self.write(b"".join(batch))
                if not keep_going:
                    return
        finally:
            for timer in timers:
                timer.cancel()

    def _render_item(self, item: QueueItem, batch: list[bytes]) -> bool:
        """Add one queued item's line to ``batch``; False when the watch ends with it."""
        if item is None:
            return False
        if isinstance(item, errors.ApiError):
            batch.append(_line("ERROR", item.body()))
            return False
        if isinstance(item, TimerMark):
            if self.request.bookmarks:
                batch.append(self._bookmark(item.revision))
            return item.tick is Tick.BOOKMARK
        line = self._event_line(item)
        if line is not None:
            batch.append(line)
        return True
