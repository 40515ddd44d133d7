"""kubernetes_asyncio against the sandbox: CRUD, the three patch types, status, watch and 410."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from sandbox.testing import ApiServerHandle
from tests.sandbox.apiserver.conftest import raw_request


def pod_body(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "containers": [
                {"name": "tensorflow", "image": "busybox:1.37.0-glibc", "env": [{"name": "A", "value": "1"}]}
            ]
        },
    }


async def test_create_applies_kube_apiserver_pod_defaults(api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    created = await core.create_namespaced_pod("default", pod_body("defaults"))
    spec = created.spec
    assert spec.scheduler_name == "default-scheduler"
    assert spec.restart_policy == "Always"
    assert spec.dns_policy == "ClusterFirst"
    assert spec.termination_grace_period_seconds == 30
    assert spec.enable_service_links is True
    assert spec.priority == 0
    assert spec.service_account_name == "default"
    assert [t.key for t in spec.tolerations] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    container = spec.containers[0]
    assert container.termination_message_path == "/dev/termination-log"
    assert container.termination_message_policy == "File"
    assert container.image_pull_policy == "IfNotPresent"
    assert created.status.phase == "Pending"
    assert created.status.qos_class == "BestEffort"
    assert created.metadata.uid and created.metadata.resource_version and created.metadata.creation_timestamp
    await core.delete_namespaced_pod("defaults", "default")


async def test_conflicts_not_found_and_already_exists_carry_kube_status_bodies(api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    created = await core.create_namespaced_pod("default", pod_body("conflict"))
    with pytest.raises(ApiException) as exists:
        await core.create_namespaced_pod("default", pod_body("conflict"))
    assert exists.value.status == 409
    assert '"reason":"AlreadyExists"' in exists.value.body
    assert 'pods \\"conflict\\" already exists' in exists.value.body
    stale = created.to_dict()
    await core.patch_namespaced_pod("conflict", "default", {"metadata": {"labels": {"x": "1"}}})
    body = api_client.sanitize_for_serialization(created)
    body["metadata"]["labels"] = {"y": "2"}
    with pytest.raises(ApiException) as conflict:
        await core.replace_namespaced_pod("conflict", "default", body)
    assert conflict.value.status == 409
    assert (
        'Operation cannot be fulfilled on pods \\"conflict\\": the object has been modified; please apply '
        "your changes to the latest version and try again" in conflict.value.body
    )
    assert stale["metadata"]["name"] == "conflict"
    await core.delete_namespaced_pod("conflict", "default")
    with pytest.raises(ApiException) as missing:
        await core.read_namespaced_pod("conflict", "default")
    assert missing.value.status == 404
    assert 'pods \\"conflict\\" not found' in missing.value.body


async def test_json_merge_and_strategic_patches(api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod("default", pod_body("patched"))
    strategic = {"spec": {"containers": [{"name": "tensorflow", "image": "busybox:1.37.1"}]}}
    result = await core.patch_namespaced_pod(
        "patched", "default", strategic, _content_type="application/strategic-merge-patch+json"
    )
    container = result.spec.containers[0]
    assert container.image == "busybox:1.37.1"
    assert [e.name for e in container.env] == ["A"], "strategic merge keeps the rest of the container"
    merged = await core.patch_namespaced_pod(
        "patched",
        "default",
        {"metadata": {"labels": {"app": "x"}}},
        _content_type="application/merge-patch+json",
    )
    assert merged.metadata.labels == {"app": "x"}
    operations = [{"op": "add", "path": "/metadata/annotations", "value": {"note": "json"}}]
    patched = await core.patch_namespaced_pod(
        "patched", "default", operations, _content_type="application/json-patch+json"
    )
    assert patched.metadata.annotations == {"note": "json"}
    await core.delete_namespaced_pod("patched", "default")


async def test_unknown_patch_content_type_is_refused_with_415(
    api: ApiServerHandle, api_client: ApiClient
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod("default", pod_body("patched"))
    code, body, _headers = await raw_request(
        api, "PATCH", "/api/v1/namespaces/default/pods/patched", b"{}", content_type="application/json"
    )
    assert code == 415
    assert body["reason"] == "UnsupportedMediaType"
    assert body["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, "
        "application/apply-patch+yaml"
    )
    await core.delete_namespaced_pod("patched", "default")


async def test_strategic_merge_is_refused_on_custom_resources(api_client: ApiClient) -> None:
    custom = client.CustomObjectsApi(api_client)
    group = {
        "group": "scheduling.volcano.sh",
        "version": "v1beta1",
        "namespace": "default",
        "plural": "podgroups",
    }
    await custom.create_namespaced_custom_object(
        body={
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "smp"},
            "spec": {"minMember": 2},
        },
        **group,
    )
    with pytest.raises(ApiException) as refused:
        await custom.patch_namespaced_custom_object(
            name="smp",
            body={"spec": {"minMember": 3}},
            _content_type="application/strategic-merge-patch+json",
            **group,
        )
    assert refused.value.status == 415
    assert (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        in refused.value.body
    )
    merged = await custom.patch_namespaced_custom_object(
        name="smp", body={"spec": {"minMember": 3}}, _content_type="application/merge-patch+json", **group
    )
    assert merged["spec"] == {"minMember": 3, "queue": "default"}, "schema default applied"
    await custom.delete_namespaced_custom_object(name="smp", **group)


async def test_status_subresource_separates_spec_and_status(api_client: ApiClient) -> None:
    custom = client.CustomObjectsApi(api_client)
    group = {"group": "kubeflow.org", "version": "v1", "namespace": "default", "plural": "tfjobs"}
    body = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "status"},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "tensorflow", "image": "busybox"}]}},
                }
            }
        },
        "status": {"conditions": [{"type": "Ignored", "status": "True"}]},
    }
    created = await custom.create_namespaced_custom_object(body=body, **group)
    assert "status" not in created, "status is dropped on create when the status subresource is enabled"
    status = {"status": {"conditions": [{"type": "Created", "status": "True"}]}}
    written = await custom.patch_namespaced_custom_object_status(
        name="status", body=status, _content_type="application/merge-patch+json", **group
    )
    assert written["status"]["conditions"][0]["type"] == "Created"
    assert written["metadata"]["generation"] == 1, "a status write does not bump generation"
    main = await custom.patch_namespaced_custom_object(
        name="status",
        body={"spec": {"runPolicy": {"backoffLimit": 2}}, "status": {"conditions": []}},
        _content_type="application/merge-patch+json",
        **group,
    )
    assert main["status"]["conditions"][0]["type"] == "Created", "a main write ignores status"
    assert main["metadata"]["generation"] == 2
    await custom.delete_namespaced_custom_object(name="status", **group)


async def test_list_with_selectors_limit_and_continue(api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    for index in range(5):
        await core.create_namespaced_pod(
            "default", pod_body(f"page-{index}", {"page": "yes", "i": str(index)})
        )
    first = await core.list_namespaced_pod("default", label_selector="page=yes", limit=2)
    assert [p.metadata.name for p in first.items] == ["page-0", "page-1"]
    second = await core.list_namespaced_pod(
        "default", label_selector="page=yes", limit=2, _continue=first.metadata._continue
    )
    assert [p.metadata.name for p in second.items] == ["page-2", "page-3"]
    chosen = await core.list_namespaced_pod(
        "default", label_selector="i in (1,3),page", field_selector="metadata.name!=page-3"
    )
    assert [p.metadata.name for p in chosen.items] == ["page-1"]
    everywhere = await core.list_pod_for_all_namespaces(
        field_selector="status.phase=Pending,metadata.namespace=default"
    )
    assert {p.metadata.name for p in everywhere.items} >= {f"page-{i}" for i in range(5)}
    await core.delete_collection_namespaced_pod("default", label_selector="page=yes")
    assert (await core.list_namespaced_pod("default", label_selector="page=yes")).items == []


async def test_a_list_of_every_namespace_read_page_by_page_has_each_object_once(
    api_client: ApiClient,
) -> None:
    """In (namespace, name) order, as kube-apiserver lists, even where a namespace is a prefix of
    another ("pg" sorts before "pg-b", though "pg/..." sorts after "pg-b/...")."""
    core = client.CoreV1Api(api_client)
    wanted = []
    for namespace in ("pg", "pg-b"):
        await core.create_namespace({"metadata": {"name": namespace}})
        for index in range(3):
            await core.create_namespaced_config_map(namespace, {"metadata": {"name": f"cm-{index}"}})
            wanted.append((namespace, f"cm-{index}"))
    seen: list[tuple[str, str]] = []
    token = None
    while True:
        page = await core.list_config_map_for_all_namespaces(limit=2, _continue=token)
        seen += [(m.metadata.namespace, m.metadata.name) for m in page.items]
        token = page.metadata._continue
        if not token:
            break
    ours = [entry for entry in seen if entry[0] in ("pg", "pg-b")]
    assert ours == wanted


async def test_watch_from_a_list_then_410_forces_a_relist(
    api: ApiServerHandle, api_client: ApiClient
) -> None:
    core = client.CoreV1Api(api_client)
    listed = await core.list_namespaced_config_map("default")
    version = listed.metadata.resource_version
    await core.create_namespaced_config_map("default", {"metadata": {"name": "watched"}, "data": {"a": "1"}})
    await core.patch_namespaced_config_map("watched", "default", {"data": {"a": "2"}})
    seen: list[tuple[str, str]] = []
    stream = watch.Watch()
    async for event in stream.stream(
        core.list_namespaced_config_map, "default", resource_version=version, timeout_seconds=5
    ):
        seen.append((event["type"], event["object"].data["a"]))
        if len(seen) == 2:
            stream.stop()
    assert seen == [("ADDED", "1"), ("MODIFIED", "2")]
    api.compact()
    with pytest.raises(ApiException) as expired:
        async for _event in watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=version, timeout_seconds=5
        ):
            pass
    assert expired.value.status == 410
    relisted = await core.list_namespaced_config_map("default")
    assert [c.metadata.name for c in relisted.items] == ["watched"]
    resumed: list[str] = []
    task_stream = watch.Watch()

    async def consume() -> None:
        async for event in task_stream.stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=relisted.metadata.resource_version,
            timeout_seconds=5,
        ):
            resumed.append(event["type"])
            task_stream.stop()

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0.2)
    await core.delete_namespaced_config_map("watched", "default")
    await asyncio.wait_for(consumer, 5)
    assert resumed == ["DELETED"]


async def test_watch_sees_objects_leave_a_label_selector(api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_config_map(
        "default", {"metadata": {"name": "leaving", "labels": {"keep": "y"}}}
    )
    events: list[str] = []
    stream = watch.Watch()

    async def consume() -> None:
        async for event in stream.stream(
            core.list_namespaced_config_map, "default", label_selector="keep=y", timeout_seconds=5
        ):
            events.append(event["type"])
            if len(events) == 2:
                stream.stop()

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0.2)
    await core.patch_namespaced_config_map("leaving", "default", {"metadata": {"labels": {"keep": "n"}}})
    await asyncio.wait_for(consumer, 5)
    assert events == ["ADDED", "DELETED"]
    await core.delete_namespaced_config_map("leaving", "default")


async def test_bookmarks_and_timeout(api: ApiServerHandle, api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    listed = await core.list_namespaced_secret("default")
    types: list[str] = []
    async for event in watch.Watch().stream(
        core.list_namespaced_secret,
        "default",
        allow_watch_bookmarks=True,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=1,
    ):
        types.append(event["type"])
    assert types == ["BOOKMARK"], "a bookmark closes a watch that timed out"


async def test_dry_run_does_not_store(api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    created = await core.create_namespaced_pod("default", pod_body("dry"), dry_run="All")
    assert created.spec.scheduler_name == "default-scheduler"
    with pytest.raises(ApiException) as missing:
        await core.read_namespaced_pod("dry", "default")
    assert missing.value.status == 404


async def test_open_watches_are_in_the_request_log_while_they_run(
    api: ApiServerHandle, api_client: ApiClient
) -> None:
    core = client.CoreV1Api(api_client)
    api.clear_request_log()
    stream = watch.Watch()

    async def consume() -> None:
        async for _event in stream.stream(
            core.list_namespaced_service_account, "kube-system", timeout_seconds=5
        ):
            pass

    consumer = asyncio.create_task(consume())
    try:
        for _attempt in range(200):
            records = [r for r in await asyncio.to_thread(api.request_log) if r.resource == "serviceaccounts"]
            if records:
                break
            await asyncio.sleep(0.05)
        assert [(r.verb, r.namespace, r.code, r.user) for r in records] == [
            ("watch", "kube-system", 200, "sandbox-admin")
        ]
    finally:
        stream.stop()
        consumer.cancel()
