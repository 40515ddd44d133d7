"""Deletion: graceful pod deletion with a node agent, finalizers, and ownerReference garbage collection."""

from __future__ import annotations

import datetime
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from sandbox.testing import ApiServerHandle
from tests.polling import eventually
from tests.sandbox.apiserver.conftest import raw_request


async def gone(read: Callable[[], Awaitable[Any]]) -> bool:
    try:
        await read()
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    return False


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "tensorflow", "image": "busybox:1.37.0-glibc"}]},
    }


async def register_node(core: client.CoreV1Api, name: str) -> None:
    await core.create_node({"metadata": {"name": name}})
    status = {
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastHeartbeatTime": now(),
                    "lastTransitionTime": now(),
                }
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 1}},
        }
    }
    await core.patch_node_status(name, status)


async def bind(api: ApiServerHandle, name: str, node: str) -> tuple[int, Any]:
    binding = {"metadata": {"name": name}, "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
    code, body, _headers = await raw_request(
        api, "POST", f"/api/v1/namespaces/default/pods/{name}/binding", json.dumps(binding).encode()
    )
    return code, body


async def test_pods_on_a_node_with_an_agent_wait_for_it(api: ApiServerHandle, api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await register_node(core, "las1")
    await core.create_namespaced_pod("default", pod("graceful"))
    await bind(api, "graceful", "las1")
    bound = await core.read_namespaced_pod("graceful", "default")
    assert bound.spec.node_name == "las1"
    assert [c.type for c in bound.status.conditions] == ["PodScheduled"]
    marked = await core.delete_namespaced_pod("graceful", "default")
    assert marked.metadata.deletion_timestamp is not None
    assert marked.metadata.deletion_grace_period_seconds == 30
    still = await core.read_namespaced_pod("graceful", "default")
    assert still.metadata.deletion_timestamp is not None
    await core.delete_namespaced_pod("graceful", "default", grace_period_seconds=0)
    assert await gone(lambda: core.read_namespaced_pod("graceful", "default"))
    await core.delete_node("las1")


async def test_pods_without_a_node_agent_go_at_once(api: ApiServerHandle, api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod("default", pod("unbound"))
    await core.delete_namespaced_pod("unbound", "default")
    assert await gone(lambda: core.read_namespaced_pod("unbound", "default"))
    await core.create_node({"metadata": {"name": "silent"}})
    await core.create_namespaced_pod("default", pod("on-silent"))
    await bind(api, "on-silent", "silent")
    await core.delete_namespaced_pod("on-silent", "default")
    assert await gone(lambda: core.read_namespaced_pod("on-silent", "default"))
    await core.delete_node("silent")


async def test_binding_an_assigned_pod_conflicts(api: ApiServerHandle, api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod("default", pod("twice"))
    await bind(api, "twice", "n1")
    code, body = await bind(api, "twice", "n2")
    assert code == 409
    assert body["message"] == (
        'Operation cannot be fulfilled on pods/binding "twice": pod twice is already assigned to node "n1"'
    )
    await core.delete_namespaced_pod("twice", "default")


async def test_finalizers_hold_deletion_until_removed(api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_config_map("default", {"metadata": {"name": "held", "finalizers": ["x/y"]}})
    await core.delete_namespaced_config_map("held", "default")
    held = await core.read_namespaced_config_map("held", "default")
    assert held.metadata.deletion_timestamp is not None
    await core.patch_namespaced_config_map("held", "default", {"metadata": {"finalizers": None}})
    assert await gone(lambda: core.read_namespaced_config_map("held", "default"))


async def owner_and_dependents(core: client.CoreV1Api, name: str, count: int) -> dict[str, Any]:
    owner = await core.create_namespaced_config_map("default", {"metadata": {"name": name}})
    reference = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": name,
        "uid": owner.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    for index in range(count):
        await core.create_namespaced_pod("default", pod(f"{name}-{index}", reference))
    return reference


async def test_background_deletion_collects_dependents(api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await owner_and_dependents(core, "bg", 2)
    await core.delete_namespaced_config_map("bg", "default", propagation_policy="Background")
    assert await gone(lambda: core.read_namespaced_config_map("bg", "default"))
    await eventually(lambda: gone(lambda: core.read_namespaced_pod("bg-1", "default")))
    assert await gone(lambda: core.read_namespaced_pod("bg-0", "default"))


async def test_foreground_deletion_removes_dependents_first(api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    reference = await owner_and_dependents(core, "fg", 1)
    await core.create_namespaced_config_map(
        "default",
        {"metadata": {"name": "fg-held", "ownerReferences": [reference], "finalizers": ["hold/it"]}},
    )
    await core.delete_namespaced_config_map("fg", "default", propagation_policy="Foreground")
    await eventually(lambda: gone(lambda: core.read_namespaced_pod("fg-0", "default")))
    owner = await core.read_namespaced_config_map("fg", "default")
    assert owner.metadata.finalizers == ["foregroundDeletion"]
    assert owner.metadata.deletion_timestamp is not None
    held = await core.read_namespaced_config_map("fg-held", "default")
    assert held.metadata.deletion_timestamp is not None
    await core.patch_namespaced_config_map("fg-held", "default", {"metadata": {"finalizers": None}})
    await eventually(lambda: gone(lambda: core.read_namespaced_config_map("fg", "default")))


async def test_orphan_deletion_keeps_dependents_without_the_reference(api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await owner_and_dependents(core, "orphan", 1)
    await core.delete_namespaced_config_map("orphan", "default", propagation_policy="Orphan")
    kept = await core.read_namespaced_pod("orphan-0", "default")
    assert kept.metadata.owner_references is None
    await core.delete_namespaced_pod("orphan-0", "default")


async def test_preconditions(api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_config_map("default", {"metadata": {"name": "pre"}})
    with pytest.raises(ApiException) as conflict:
        await core.delete_namespaced_config_map("pre", "default", body={"preconditions": {"uid": "other"}})
    assert conflict.value.status == 409
    assert "Precondition failed: UID in precondition: other" in conflict.value.body
    await core.delete_namespaced_config_map("pre", "default")


async def test_namespace_deletion_empties_it(api: ApiServerHandle, api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespace({"metadata": {"name": "doomed"}})
    await core.create_namespaced_config_map("doomed", {"metadata": {"name": "inside"}})
    await core.delete_namespace("doomed")
    with pytest.raises(ApiException) as refused:
        await core.create_namespaced_config_map("doomed", {"metadata": {"name": "late"}})
    assert refused.value.status in (403, 404)
    await eventually(lambda: gone(lambda: core.read_namespace("doomed")))
    with pytest.raises(ApiException) as protected:
        await core.delete_namespace("default")
    assert protected.value.status == 403
