"""A watch's bookmarks claim no event the watcher was not sent.

kube-apiserver's bookmark resourceVersion promises that every event up to it has reached the
watcher, so a client may resume from it. The sandbox's watch queues events and timer marks in one
queue; a mark rendered with the storage's revision *at the time it is written* claimed the events
still queued behind it, and a watch that ended at its deadline mark dropped them: the client
resumed past them and never saw them (a 10,000-job benchmark lost two PodGroups' ADDED events).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sandbox.apiserver.representation import AS_STORED
from sandbox.apiserver.state import ApiState
from sandbox.apiserver.watching import WatchRequest, WatchStream


def configmap(name: str) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "ns"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {}}


def watch_request(state: ApiState, resource_version: str, timeout: float, **options: bool) -> WatchRequest:
    info = state.registry.lookup("", "v1", "configmaps")
    assert info is not None
    return WatchRequest(
        info=info, namespace="ns", matches=None, resource_version=resource_version, timeout=timeout,
        bookmarks=True, send_initial_events=options.get("send_initial_events", False), form=AS_STORED,
        include_object="Metadata",
    )


class GatedWriter:
    """Records what the stream writes; while ``gate`` is clear, a write waits (a slow client)."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.writing = asyncio.Event()

    async def __call__(self, data: bytes) -> None:
        self.writing.set()
        await self.gate.wait()
        self.lines += [json.loads(line) for line in data.splitlines() if line]

    def names(self, event_type: str) -> list[str]:
        return [line["object"]["metadata"]["name"] for line in self.lines if line["type"] == event_type]

    def last_bookmark(self) -> str:
        bookmarks = [line for line in self.lines if line["type"] == "BOOKMARK"]
        return str(bookmarks[-1]["object"]["metadata"]["resourceVersion"])


async def resume(state: ApiState, resource_version: str) -> list[str]:
    """The names a watch from ``resource_version`` replays before it times out."""
    writer = GatedWriter()
    await WatchStream(state, watch_request(state, resource_version, timeout=0.05), writer).run()
    return writer.names("ADDED")


async def test_the_deadline_bookmark_does_not_claim_events_queued_behind_it() -> None:
    state = ApiState.create()
    key = state.registry.lookup("", "v1", "configmaps").storage_key  # type: ignore[union-attr]
    writer = GatedWriter()
    stream = asyncio.create_task(WatchStream(state, watch_request(state, "", timeout=0.2), writer).run())
    await asyncio.sleep(0.01)
    writer.gate.clear()  # the client stops reading: what follows waits in the watch's queue
    state.storage.put(key, configmap("before-deadline"), "ADDED")
    await writer.writing.wait()
    await asyncio.sleep(0.3)  # the deadline mark is queued now
    state.storage.put(key, configmap("after-deadline"), "ADDED")
    writer.gate.set()
    await asyncio.wait_for(stream, 5)

    assert writer.names("ADDED") == ["before-deadline"]  # the watch ended at its deadline
    # ... and its last bookmark lets the client resume with the event it was not sent
    assert await resume(state, writer.last_bookmark()) == ["after-deadline"]


async def test_the_initial_events_bookmark_is_the_lists_revision() -> None:
    state = ApiState.create()
    key = state.registry.lookup("", "v1", "configmaps").storage_key  # type: ignore[union-attr]
    state.storage.put(key, configmap("listed"), "ADDED")
    writer = GatedWriter()
    writer.gate.clear()  # the initial ADDED waits to be written ...
    request = watch_request(state, "", timeout=0.3, send_initial_events=True)
    stream = asyncio.create_task(WatchStream(state, request, writer).run())
    await writer.writing.wait()
    state.storage.put(key, configmap("during-initial-events"), "ADDED")  # ... while this one comes
    writer.gate.set()
    await asyncio.wait_for(stream, 5)

    initial_end = next(line for line in writer.lines if line["type"] == "BOOKMARK")
    assert initial_end["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert writer.names("ADDED") == ["listed", "during-initial-events"]
    resumed = initial_end["object"]["metadata"]["resourceVersion"]
    assert await resume(state, resumed) == ["during-initial-events"]
