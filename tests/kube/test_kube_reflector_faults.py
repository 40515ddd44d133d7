"""Reflector recovery from faults the sandbox API server cannot produce on demand.

A small scripted HTTP server stands in for the API server here: it answers list requests and
serves watch streams that stall, break or fail, so that the real KubeApi and Reflector code paths
for those faults are exercised end to end over HTTP.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kube.api import KubeApi
from kube.errors import Gone, NotFound
from kube.reflector import Reflector
from kube.resources import CONFIGMAPS
from kube.store import Store
from tests.kube.conftest import client_for
from tests.polling import eventually


def configmap(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}, "data": {}}


@dataclass
class Script:
    """What the scripted server answers; each list/watch request pops the next behaviour."""

    lists: list[Callable[[], web.StreamResponse | dict[str, Any]]] = field(default_factory=list)
    watches: list[str] = field(default_factory=list)  # "stall", "gone", "garbage", "end", "event"
    list_requests: int = 0
    list_queries: list[dict[str, str]] = field(default_factory=list)
    watch_requests: list[dict[str, str]] = field(default_factory=list)


async def serve(script: Script, request: web.Request) -> web.StreamResponse:
    if request.query.get("watch") != "true":
        script.list_requests += 1
        script.list_queries.append(dict(request.query))
        behaviour = script.lists.pop(0) if len(script.lists) > 1 else script.lists[0]
        answer = behaviour()
        return answer if isinstance(answer, web.StreamResponse) else web.json_response(answer)
    script.watch_requests.append(dict(request.query))
    mode = script.watches.pop(0) if script.watches else "stall"
    response = web.StreamResponse()
    await response.prepare(request)
    if mode == "stall":
        await asyncio.sleep(3600)
    elif mode == "gone":
        status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "old"}
        error = {"type": "ERROR", "object": status}
        await response.write(json.dumps(error).encode() + b"\n")
    elif mode == "garbage":
        await response.write(b'{"type": "ADDED", "object": {"metad')
        await response.write(b"\nnot json\n")
    elif mode == "event":
        added = {"type": "ADDED", "object": configmap("late", "9")}
        await response.write(json.dumps(added).encode() + b"\n")
    elif mode == "steady":  # an event every 0.1 s for 1 s, then quiet
        for index in range(10):
            added = {"type": "ADDED", "object": configmap(f"steady-{index}", str(10 + index))}
            await response.write(json.dumps(added).encode() + b"\n")
            await asyncio.sleep(0.1)
        await asyncio.sleep(3600)
    return response


@pytest.fixture
async def scripted(tmp_path: Path) -> AsyncIterator[tuple[Script, KubeApi]]:
    script = Script()
    app = web.Application()
    app.router.add_get("/api/v1/namespaces/ns/configmaps", functools.partial(serve, script))
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    api = KubeApi(await client_for(tmp_path, f"http://127.0.0.1:{port}"), qps=0)
    try:
        yield script, api
    finally:
        await api.close()
        await runner.cleanup()


def list_of(*items: dict[str, Any], rv: str) -> Callable[[], dict[str, Any]]:
    return lambda: {"kind": "ConfigMapList", "metadata": {"resourceVersion": rv}, "items": list(items)}


async def run_reflector(reflector: Reflector, condition: Callable[[], bool]) -> None:
    task = asyncio.create_task(reflector.run())
    try:
        await eventually(condition, within=5.0, interval=0.01)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_a_stalled_watch_is_logged_and_restarted(
    scripted: tuple[Script, KubeApi], caplog: pytest.LogCaptureFixture
) -> None:
    script, api = scripted
    script.lists = [list_of(configmap("a", "5"), rv="5")]
    script.watches = ["stall", "event"]
    store = Store()
    reflector = Reflector(api, CONFIGMAPS, store, namespace="ns", watch_timeout_seconds=60, stall_timeout=0.3)
    with caplog.at_level(logging.WARNING, logger="kube.reflector"):
        await run_reflector(reflector, lambda: store.get("ns/late") is not None)
    assert reflector.stall_count == 1
    assert any("stalled" in record.getMessage() for record in caplog.records)
    # the restarted watch resumes from the list's resourceVersion: no relist was needed
    assert [w["resourceVersion"] for w in script.watch_requests[:2]] == ["5", "5"]
    assert script.list_requests == 1
    assert script.watch_requests[0]["allowWatchBookmarks"] == "true"
    assert script.watch_requests[0]["timeoutSeconds"] == "60"


async def test_a_watch_fed_more_often_than_the_stall_timeout_is_not_stalled(
    scripted: tuple[Script, KubeApi],
) -> None:
    # Events 0.1 s apart for 1 s, over three times the stall timeout of 0.3 s: only the quiet
    # after the last one counts as a stall, and the restarted watch resumes after it.
    script, api = scripted
    script.lists = [list_of(rv="5")]
    script.watches = ["steady", "event"]
    store = Store()
    reflector = Reflector(api, CONFIGMAPS, store, namespace="ns", watch_timeout_seconds=60, stall_timeout=0.3)
    await run_reflector(reflector, lambda: store.get("ns/late") is not None)
    assert all(store.get(f"ns/steady-{index}") is not None for index in range(10))
    assert reflector.stall_count == 1
    assert [w["resourceVersion"] for w in script.watch_requests[:2]] == ["5", "19"]


async def test_a_watch_error_410_makes_the_reflector_relist(scripted: tuple[Script, KubeApi]) -> None:
    script, api = scripted
    script.lists = [
        list_of(configmap("a", "5"), configmap("b", "5"), rv="5"),
        list_of(configmap("b", "7"), rv="7"),
    ]
    script.watches = ["gone"]
    seen: list[tuple[str, str]] = []
    store = Store()
    reflector = Reflector(
        api,
        CONFIGMAPS,
        store,
        namespace="ns",
        stall_timeout=30,
        handlers=[lambda kind, obj, old: seen.append((kind, obj["metadata"]["name"]))],
    )
    await run_reflector(reflector, lambda: reflector.list_count == 2)
    assert store.keys() == ["ns/b"]
    # the relist reports what changed during the gap: b was modified, a vanished
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "b"), ("DELETED", "a")]
    assert reflector.resource_version == "7"


async def test_a_broken_watch_stream_is_retried_from_the_last_resource_version(
    scripted: tuple[Script, KubeApi],
) -> None:
    script, api = scripted
    script.lists = [list_of(configmap("a", "5"), rv="5")]
    script.watches = ["garbage", "event"]
    store = Store()
    reflector = Reflector(api, CONFIGMAPS, store, namespace="ns", stall_timeout=30, backoff_base=0.01)
    await run_reflector(reflector, lambda: store.get("ns/late") is not None)
    assert script.list_requests == 1
    assert len(script.watch_requests) >= 2
    assert reflector.last_error is None


async def test_list_failures_back_off_and_the_reflector_syncs_once_the_server_recovers(
    scripted: tuple[Script, KubeApi],
) -> None:
    script, api = scripted

    def unavailable() -> web.Response:
        return web.json_response(
            {"kind": "Status", "code": 503, "reason": "ServiceUnavailable", "message": "etcd is sad"},
            status=503,
        )

    script.lists = [unavailable, unavailable, list_of(configmap("a", "5"), rv="5")]
    store = Store()
    reflector = Reflector(api, CONFIGMAPS, store, namespace="ns", stall_timeout=30, backoff_base=0.01)
    assert not reflector.synced
    await run_reflector(reflector, lambda: reflector.synced)
    await reflector.wait_synced()
    assert script.list_requests == 3
    assert store.keys() == ["ns/a"]


async def test_kube_api_maps_watch_errors_and_http_errors(scripted: tuple[Script, KubeApi]) -> None:
    script, api = scripted
    script.watches = ["gone"]
    with pytest.raises(Gone):
        async for _ in api.watch(CONFIGMAPS, "ns", resource_version="1", timeout_seconds=5):
            pass
    with pytest.raises(NotFound):
        await api.get(CONFIGMAPS, "missing", "elsewhere")


async def test_malformed_list_answers_are_survived(scripted: tuple[Script, KubeApi]) -> None:
    script, api = scripted

    def not_an_object() -> web.Response:
        return web.json_response(["not", "a", "list", "object"])

    unnamed = {"metadata": {"namespace": "ns"}, "data": {}}
    script.lists = [not_an_object, list_of(unnamed, configmap("a", "5"), rv="5")]
    store = Store()
    reflector = Reflector(api, CONFIGMAPS, store, namespace="ns", stall_timeout=30, backoff_base=0.01)
    await run_reflector(reflector, lambda: reflector.synced)
    assert store.keys() == ["ns/a"]
    assert script.list_requests == 2


@pytest.mark.parametrize("mode", ["end", "gone"])
async def test_a_server_that_ends_every_watch_at_once_is_not_hammered(
    scripted: tuple[Script, KubeApi], mode: str
) -> None:
    script, api = scripted
    script.lists = [list_of(configmap("a", "5"), rv="5")]
    script.watches = [mode] * 1000
    reflector = Reflector(api, CONFIGMAPS, Store(), namespace="ns", stall_timeout=30, backoff_base=0.05)
    task = asyncio.create_task(reflector.run())
    await asyncio.sleep(0.6)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # a tight loop would have made hundreds of requests; backoff (0.05 s doubling) allows a handful
    assert 1 <= len(script.watch_requests) <= 12
    assert reflector.synced


async def test_the_first_list_may_come_from_the_watch_cache_and_a_relist_never_does(
    scripted: tuple[Script, KubeApi],
) -> None:
    # resourceVersion "0" lets kube-apiserver answer from its watch cache; after a 410 the relist
    # must not go back in time, so it reads the latest state (no resourceVersion), page by page.
    script, api = scripted
    script.lists = [
        list_of(configmap("a", "5"), rv="5"),
        list_of(configmap("a", "5"), configmap("b", "7"), rv="7"),
    ]
    script.watches = ["gone"]
    store = Store()
    reflector = Reflector(
        api, CONFIGMAPS, store, namespace="ns", watch_timeout_seconds=60, first_list_from_cache=True
    )
    await run_reflector(reflector, lambda: store.get("ns/b") is not None)
    assert [query.get("resourceVersion") for query in script.list_queries[:2]] == ["0", None]
    assert script.list_queries[0]["limit"] == "500"


async def test_a_continued_page_carries_no_resource_version(scripted: tuple[Script, KubeApi]) -> None:
    # The server refuses a continue token together with a resourceVersion: the token carries it.
    script, api = scripted
    first = {"kind": "ConfigMapList", "metadata": {"resourceVersion": "5", "continue": "next"},
             "items": [configmap("a", "5")]}  # fmt: skip
    script.lists = [lambda: first, list_of(configmap("b", "5"), rv="5")]
    items, resource_version = await api.list_all(CONFIGMAPS, "ns", resource_version="0")
    assert [item["metadata"]["name"] for item in items] == ["a", "b"]
    assert resource_version == "5"
    assert [query.get("resourceVersion") for query in script.list_queries] == ["0", None]
    assert script.list_queries[1]["continue"] == "next"
