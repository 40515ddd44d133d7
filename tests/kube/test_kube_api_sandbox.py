"""KubeApi against the sandbox API server: CRUD, the three patch types, the status subresource."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kube.api import KubeApi
from kube.apimetrics import PrometheusRequestMetrics
from kube.errors import AlreadyExists, Conflict, Invalid, NotFound, Unauthorized, UnsupportedMediaType
from kube.patches import PatchType, json_patch_test_resource_version
from kube.resources import CONFIGMAPS, PODGROUPS_V1BETA1, PODS
from tests.kube.conftest import client_for, connect


def configmap(name: str, data: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {}},
            "data": data}


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "kube-test"}},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["true"]}]},
    }


async def test_create_get_list_replace_delete(kube_api: KubeApi, namespace: str) -> None:
    created = await kube_api.create(CONFIGMAPS, configmap("one", {"k": "v"}, {"tier": "a"}), namespace)
    assert created["metadata"]["uid"] and created["metadata"]["resourceVersion"]
    two = configmap("two", {}, {"tier": "b"})
    two["metadata"]["namespace"] = namespace
    await kube_api.create(CONFIGMAPS, two)  # the namespace comes from the body
    with pytest.raises(AlreadyExists):
        await kube_api.create(CONFIGMAPS, configmap("one", {}), namespace)

    fetched = await kube_api.get(CONFIGMAPS, "one", namespace)
    assert fetched["data"] == {"k": "v"}
    page = await kube_api.list(CONFIGMAPS, namespace, label_selector="tier=a")
    assert [item["metadata"]["name"] for item in page["items"]] == ["one"]
    items, resource_version = await kube_api.list_all(CONFIGMAPS, namespace, page_size=1)
    assert sorted(item["metadata"]["name"] for item in items) == ["one", "two"]
    assert all(item["kind"] == "ConfigMap" and item["apiVersion"] == "v1" for item in items)
    assert resource_version

    fetched["data"] = {"k": "changed"}
    replaced = await kube_api.replace(CONFIGMAPS, "one", fetched, namespace)
    assert replaced["data"] == {"k": "changed"}
    with pytest.raises(Conflict):  # fetched still carries the old resourceVersion
        await kube_api.replace(CONFIGMAPS, "one", fetched, namespace)

    await kube_api.delete(CONFIGMAPS, "one", namespace, uid_precondition=created["metadata"]["uid"])
    with pytest.raises(NotFound):
        await kube_api.get(CONFIGMAPS, "one", namespace)
    with pytest.raises(NotFound):
        await kube_api.delete(CONFIGMAPS, "one", namespace)


async def test_dry_run_create_persists_nothing(kube_api: KubeApi, namespace: str) -> None:
    answer = await kube_api.create(CONFIGMAPS, configmap("dry", {"k": "v"}), namespace, dry_run=True)
    assert answer["metadata"]["name"] == "dry"
    with pytest.raises(NotFound):
        await kube_api.get(CONFIGMAPS, "dry", namespace)


async def test_merge_patch_sets_and_removes_keys(kube_api: KubeApi, namespace: str) -> None:
    await kube_api.create(CONFIGMAPS, configmap("m", {"keep": "1", "drop": "2"}), namespace)
    patched = await kube_api.patch(CONFIGMAPS, "m", {"data": {"drop": None, "new": "3"}}, namespace,
                                   patch_type=PatchType.MERGE)
    assert patched["data"] == {"keep": "1", "new": "3"}


async def test_json_patch_with_a_resource_version_guard(kube_api: KubeApi, namespace: str) -> None:
    created = await kube_api.create(CONFIGMAPS, configmap("j", {"a": "1"}), namespace)
    guard = json_patch_test_resource_version(created["metadata"]["resourceVersion"])
    patched = await kube_api.patch(
        CONFIGMAPS, "j", [guard, {"op": "add", "path": "/data/b", "value": "2"}], namespace,
        patch_type=PatchType.JSON,
    )
    assert patched["data"] == {"a": "1", "b": "2"}
    with pytest.raises(Invalid):  # the guard's resourceVersion is stale now
        await kube_api.patch(CONFIGMAPS, "j", [guard, {"op": "remove", "path": "/data/a"}], namespace,
                             patch_type=PatchType.JSON)
    assert (await kube_api.get(CONFIGMAPS, "j", namespace))["data"] == {"a": "1", "b": "2"}


async def test_strategic_merge_patch_merges_lists_by_key(kube_api: KubeApi, namespace: str) -> None:
    body = pod("s")
    body["spec"]["containers"].append({"name": "sidecar", "image": "busybox", "command": ["sleep", "1"]})
    await kube_api.create(PODS, body, namespace)
    # a merge patch would replace the whole list; a strategic one merges by container name
    patch = {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.36"}]}}
    patched = await kube_api.patch(PODS, "s", patch, namespace, patch_type=PatchType.STRATEGIC)
    images = {c["name"]: c["image"] for c in patched["spec"]["containers"]}
    assert images == {"main": "busybox", "sidecar": "busybox:1.36"}
    assert patched["spec"]["containers"][1]["command"] == ["sleep", "1"]


async def test_patch_type_is_stated_explicitly_and_checked_against_the_body(kube_api: KubeApi) -> None:
    with pytest.raises(TypeError, match="list of operations"):
        await kube_api.patch(CONFIGMAPS, "x", {"data": {}}, "default", patch_type=PatchType.JSON)
    with pytest.raises(TypeError, match="is a dict"):
        await kube_api.patch(CONFIGMAPS, "x", [], "default", patch_type=PatchType.MERGE)
    with pytest.raises(ValueError, match="field manager"):
        await kube_api.patch(CONFIGMAPS, "x", {}, "default", patch_type=PatchType.APPLY)


async def test_status_subresource_is_written_apart_from_the_object(kube_api: KubeApi, namespace: str) -> None:
    await kube_api.create(PODS, pod("p"), namespace)
    status = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    patched = await kube_api.patch(PODS, "p", status, namespace, patch_type=PatchType.MERGE,
                                   subresource="status")
    assert patched["status"]["phase"] == "Running"
    # a status write leaves labels alone; a write to the object leaves the status alone
    await kube_api.patch(PODS, "p", {"metadata": {"labels": {"x": "y"}}}, namespace,
                         patch_type=PatchType.MERGE, subresource="status")
    await kube_api.patch(PODS, "p", {"status": {"phase": "Failed"}}, namespace, patch_type=PatchType.MERGE)
    current = await kube_api.get(PODS, "p", namespace)
    assert current["status"]["phase"] == "Running"
    assert "x" not in current["metadata"]["labels"]
    fetched_status = await kube_api.get(PODS, "p", namespace, subresource="status")
    assert fetched_status["status"]["phase"] == "Running"


async def test_strategic_merge_on_a_custom_resource_is_415(kube_api: KubeApi, namespace: str) -> None:
    with pytest.raises(UnsupportedMediaType):
        await kube_api.patch(PODGROUPS_V1BETA1, "nothing", {"spec": {}}, namespace,
                             patch_type=PatchType.STRATEGIC)


async def test_request_observer_counts_every_request(sandbox_apiserver: Any, namespace: str) -> None:
    registry = CollectorRegistry()
    async with connect(sandbox_apiserver, qps=0, on_request=PrometheusRequestMetrics(registry)) as api:
        await api.create(CONFIGMAPS, configmap("counted", {}), namespace)
        with pytest.raises(NotFound):
            await api.get(CONFIGMAPS, "absent", namespace)
    assert registry.get_sample_value(
        "rest_client_requests_total", {"verb": "create", "resource": "configmaps", "code": "201"}
    ) == 1.0
    assert registry.get_sample_value(
        "rest_client_requests_total", {"verb": "get", "resource": "configmaps", "code": "404"}
    ) == 1.0



async def test_watch_streams_events_from_a_resource_version_until_the_server_timeout(
    kube_api: KubeApi, namespace: str
) -> None:
    listed = await kube_api.list(CONFIGMAPS, namespace)
    start = listed["metadata"]["resourceVersion"]
    await kube_api.create(CONFIGMAPS, configmap("w", {"v": "1"}), namespace)
    await kube_api.patch(CONFIGMAPS, "w", {"data": {"v": "2"}}, namespace, patch_type=PatchType.MERGE)
    await kube_api.delete(CONFIGMAPS, "w", namespace)
    seen = []
    async for event in kube_api.watch(CONFIGMAPS, namespace, resource_version=start, timeout_seconds=1):
        seen.append((event.type, event.object.get("metadata", {}).get("name")))
    # history replay from the list's resourceVersion, then the server ends the stream at its timeout
    assert [s for s in seen if s[0] != "BOOKMARK"] == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


async def test_a_rejected_token_maps_to_unauthorized(sandbox_apiserver: Any, tmp_path: Path) -> None:
    client = await client_for(
        tmp_path, sandbox_apiserver.url, token="not-a-valid-token", ca_pem=sandbox_apiserver.ca_pem
    )
    api = KubeApi(client, qps=0)
    try:
        with pytest.raises(Unauthorized):
            await api.list(CONFIGMAPS, "default")
    finally:
        await api.close()


async def test_server_side_apply_creates_the_object_with_a_field_manager(
    sandbox_apiserver: Any, namespace: str
) -> None:
    async with connect(sandbox_apiserver, qps=0, field_manager="kube-tests") as api:
        intent = configmap("applied", {"a": "1"})
        intent["metadata"]["namespace"] = namespace
        applied = await api.patch(CONFIGMAPS, "applied", intent, namespace, patch_type=PatchType.APPLY,
                                  force=True)
        assert applied["data"] == {"a": "1"}
        stored = await api.get(CONFIGMAPS, "applied", namespace)
        assert stored["metadata"]["uid"] == applied["metadata"]["uid"]
