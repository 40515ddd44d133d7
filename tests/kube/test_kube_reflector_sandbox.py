"""The reflector keeps its store equal to the server's objects through changes and a 410 relist."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kube.api import KubeApi
from kube.patches import PatchType
from kube.reflector import Reflector
from kube.resources import CONFIGMAPS
from kube.store import Store, by_label
from tests.polling import eventually


def configmap(name: str, group: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"group": group}},
        "data": {"v": "0"},
    }


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str | None]] = []

    def __call__(self, kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        old_rv = old["metadata"]["resourceVersion"] if old is not None else None
        self.events.append((kind, obj["metadata"]["name"], old_rv))

    def names(self, kind: str) -> list[str]:
        return [name for event_kind, name, _ in self.events if event_kind == kind]


@pytest.fixture
async def running() -> AsyncIterator[Callable[[Reflector], None]]:
    tasks: list[asyncio.Task[None]] = []

    def start(reflector: Reflector) -> None:
        tasks.append(asyncio.create_task(reflector.run()))

    yield start
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def server_state(api: KubeApi, namespace: str) -> dict[str, str]:
    items, _ = await api.list_all(CONFIGMAPS, namespace)
    return {item["metadata"]["name"]: item["metadata"]["resourceVersion"] for item in items}


def store_state(store: Store) -> dict[str, str]:
    return {obj["metadata"]["name"]: obj["metadata"]["resourceVersion"] for obj in store.list()}


async def test_list_then_watch_keeps_the_store_and_indexes_current(
    kube_api: KubeApi, namespace: str, running: Callable[[Reflector], None]
) -> None:
    await kube_api.create(CONFIGMAPS, configmap("before", "x"), namespace)
    store = Store()
    store.add_index("group", by_label("group"))
    recorder = Recorder()
    reflector = Reflector(
        kube_api,
        CONFIGMAPS,
        store,
        namespace=namespace,
        handlers=[recorder],
        watch_timeout_seconds=5,
        page_size=1,
    )
    running(reflector)
    await asyncio.wait_for(reflector.wait_synced(), 10)
    assert store.keys() == [f"{namespace}/before"]
    assert recorder.events == [("ADDED", "before", None)]

    await kube_api.create(CONFIGMAPS, configmap("during", "x"), namespace)
    await kube_api.patch(
        CONFIGMAPS, "before", {"metadata": {"labels": {"group": "y"}}}, namespace, patch_type=PatchType.MERGE
    )
    await kube_api.delete(CONFIGMAPS, "during", namespace)
    await kube_api.create(CONFIGMAPS, configmap("after", "x"), namespace)

    expected = await server_state(kube_api, namespace)
    await eventually(lambda: store_state(store) == expected)
    assert [obj["metadata"]["name"] for obj in store.by_index("group", "x")] == ["after"]
    assert [obj["metadata"]["name"] for obj in store.by_index("group", "y")] == ["before"]
    assert recorder.names("ADDED") == ["before", "during", "after"]
    assert recorder.names("MODIFIED") == ["before"]
    assert recorder.names("DELETED") == ["during"]
    modified = next(event for event in recorder.events if event[0] == "MODIFIED")
    assert modified[2] is not None  # the handler got the previous version


async def test_compaction_makes_the_reflector_relist_and_the_store_stays_exact(
    sandbox_apiserver: Any, kube_api: KubeApi, namespace: str, running: Callable[[Reflector], None]
) -> None:
    for name in ["a", "b", "c"]:
        await kube_api.create(CONFIGMAPS, configmap(name, "x"), namespace)
    store = Store()
    recorder = Recorder()
    reflector = Reflector(
        kube_api,
        CONFIGMAPS,
        store,
        namespace=namespace,
        handlers=[recorder],
        watch_timeout_seconds=5,
        backoff_base=0.05,
    )
    running(reflector)
    await asyncio.wait_for(reflector.wait_synced(), 10)
    lists_before = reflector.list_count

    await kube_api.delete(CONFIGMAPS, "a", namespace)
    await kube_api.create(CONFIGMAPS, configmap("d", "x"), namespace)
    await kube_api.patch(CONFIGMAPS, "b", {"data": {"v": "1"}}, namespace, patch_type=PatchType.MERGE)
    sandbox_apiserver.compact()

    await eventually(lambda: reflector.list_count > lists_before)
    await kube_api.create(CONFIGMAPS, configmap("e", "x"), namespace)
    expected = await server_state(kube_api, namespace)
    await eventually(lambda: store_state(store) == expected)
    assert sorted(expected) == ["b", "c", "d", "e"]
    # every change reached the handlers exactly once, whether by watch or by the relist's diff
    # (test_kube_reflector_faults shows the diff reporting changes made during the gap itself)
    assert recorder.names("DELETED") == ["a"]
    assert sorted(recorder.names("ADDED")) == ["a", "b", "c", "d", "e"]
    assert recorder.names("MODIFIED") == ["b"]


async def test_the_transform_trims_listed_and_watched_objects_before_the_store_keeps_them(
    kube_api: KubeApi, namespace: str, running: Callable[[Reflector], None]
) -> None:
    def without_data(obj: dict[str, Any]) -> dict[str, Any]:
        obj.pop("data", None)
        return obj

    await kube_api.create(CONFIGMAPS, configmap("listed", "x"), namespace)
    store = Store()
    recorder = Recorder()
    reflector = Reflector(
        kube_api,
        CONFIGMAPS,
        store,
        namespace=namespace,
        handlers=[recorder],
        watch_timeout_seconds=5,
        transform=without_data,
    )
    running(reflector)
    await asyncio.wait_for(reflector.wait_synced(), 10)
    await kube_api.create(CONFIGMAPS, configmap("watched", "x"), namespace)
    await eventually(lambda: store.get(f"{namespace}/watched") is not None)
    for name in ("listed", "watched"):
        cached = store.get(f"{namespace}/{name}")
        assert cached is not None and "data" not in cached and cached["metadata"]["name"] == name
    assert recorder.names("ADDED") == ["listed", "watched"]


async def test_a_metadata_only_reflector_lists_and_watches_the_objects_metadata_alone(
    kube_api: KubeApi, namespace: str, running: Callable[[Reflector], None]
) -> None:
    await kube_api.create(CONFIGMAPS, configmap("listed", "x"), namespace)
    store = Store()
    seen: list[dict[str, Any]] = []
    reflector = Reflector(
        kube_api,
        CONFIGMAPS,
        store,
        namespace=namespace,
        handlers=[lambda _kind, obj, _old: seen.append(obj)],
        watch_timeout_seconds=5,
        metadata_only=True,
    )
    running(reflector)
    await asyncio.wait_for(reflector.wait_synced(), 10)
    await kube_api.create(CONFIGMAPS, configmap("watched", "x"), namespace)
    await kube_api.patch(
        CONFIGMAPS, "watched", {"metadata": {"labels": {"group": "y"}}}, namespace, patch_type=PatchType.MERGE
    )
    await eventually(
        lambda: (store.get(f"{namespace}/watched") or {}).get("metadata", {}).get("labels") == {"group": "y"}
    )
    # The server sent no data: what the handlers and the store get is the object without it,
    # under its own kind, its labels and resourceVersion as the server has them.
    for obj in [*seen, store.get(f"{namespace}/listed"), store.get(f"{namespace}/watched")]:
        assert obj is not None and set(obj) == {"apiVersion", "kind", "metadata"}
        assert (obj["apiVersion"], obj["kind"]) == ("v1", "ConfigMap") and obj["metadata"]["resourceVersion"]
    stored = await kube_api.get(CONFIGMAPS, "watched", namespace)
    assert store.get(f"{namespace}/watched") == {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": stored["metadata"]
    }  # fmt: skip
    assert [obj["metadata"]["name"] for obj in seen] == ["listed", "watched", "watched"]
