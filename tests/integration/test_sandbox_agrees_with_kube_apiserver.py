"""The sandbox API server answers as kube-apiserver does: the same object in, the same object out.

Each case sends the same request to both servers (a sandbox and a real kube-apiserver v1.20,
both fresh, without the webhook) and compares what they return once the values that differ by
nature (uids, resourceVersions, timestamps, allocated IPs) are set aside. kube-apiserver is right:
a difference is a sandbox defect, unless it is a field that newer releases default and v1.20
does not (listed below with the release that added it).
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from controller.resources import TFJOBS
from kube.api import KubeApi
from kube.client import make_api_client
from kube.errors import ApiError
from kube.patches import PatchType
from kube.resources import CONFIGMAPS, LEASES, NAMESPACES, PODGROUPS_V1BETA1, PODS, SERVICES, Resource
from realcluster.apiserver import RealApiServer, start_real_apiserver
from sandbox.testing import ApiServerHandle, start_apiserver

from .cluster import load_seed

pytestmark = pytest.mark.kube_apiserver

NAMESPACE = "agree"

# Set by the sandbox, as current releases do, and absent from v1.20's answers.
NEWER_THAN_V1_20: dict[str, frozenset[tuple[str, ...]]] = {
    "Pod": frozenset({("metadata", "generation")}),  # pods have a generation since v1.33
    "Service": frozenset(
        {
            ("spec", "ipFamilies", "0"),  # dual-stack fields defaulted since v1.21
            ("spec", "ipFamilyPolicy"),
            ("spec", "internalTrafficPolicy"),  # defaulted since v1.22
        }
    ),
    "Namespace": frozenset({("metadata", "labels", "kubernetes.io/metadata.name")}),  # v1.21
}
# What kube-apiserver's ServiceAccount admission plugin adds; the test server runs without it
# (it would wait for service-account tokens that no controller here makes).
PLUGIN_OFF: dict[str, frozenset[tuple[str, ...]]] = {
    "Pod": frozenset({("spec", "serviceAccount"), ("spec", "serviceAccountName")}),
}
VOLATILE = {
    ("metadata", "uid"),
    ("metadata", "resourceVersion"),
    ("metadata", "creationTimestamp"),
    ("metadata", "managedFields"),
    ("metadata", "selfLink"),
    ("spec", "clusterIP"),
    ("spec", "clusterIPs"),
}


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[ApiServerHandle, RealApiServer]]:
    with start_apiserver() as sandbox, start_real_apiserver() as real:
        yield sandbox, real


@pytest.fixture
async def apis(servers: tuple[ApiServerHandle, RealApiServer]) -> AsyncIterator[tuple[KubeApi, KubeApi]]:
    made = []
    for server in servers:
        api = KubeApi(await make_api_client(str(server.kubeconfig)), qps=1000.0, burst=1000)
        made.append(api)
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        try:
            await api.create(NAMESPACES, namespace)
        except ApiError as error:
            if error.status != 409:
                raise
    try:
        yield made[0], made[1]
    finally:
        for api in made:
            await api.close()


def _flatten(value: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if isinstance(value, dict) and value:
        flat: dict[tuple[str, ...], Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, (*path, str(key))))
        return flat
    if isinstance(value, list) and value:
        flat = {}
        for index, item in enumerate(value):
            flat.update(_flatten(item, (*path, str(index))))
        return flat
    return {path: value}


def _differences(kind: str, sandbox: dict[str, Any], real: dict[str, Any]) -> list[str]:
    left, right = _flatten(sandbox), _flatten(real)
    newer = NEWER_THAN_V1_20.get(kind, frozenset()) | PLUGIN_OFF.get(kind, frozenset())
    lines = []
    for path in sorted(set(left) | set(right)):
        if path[:2] in VOLATILE or path in newer:
            continue
        ours, theirs = left.get(path, "<absent>"), right.get(path, "<absent>")
        if ours != theirs:
            lines.append(f"{'.'.join(path)}: sandbox {ours!r}, kube-apiserver {theirs!r}")
    return lines


async def _both(
    apis: tuple[KubeApi, KubeApi], call: str, res: Resource, *args: Any, **kwargs: Any
) -> tuple[Any, Any]:
    """The same call on both servers: each answer, or the ApiError it raised."""
    answers: list[Any] = []
    for api in apis:
        try:
            answers.append(await getattr(api, call)(res, *copy.deepcopy(args), **kwargs))
        except ApiError as error:
            answers.append(error)
    return answers[0], answers[1]


async def _assert_same(
    apis: tuple[KubeApi, KubeApi], call: str, res: Resource, *args: Any, **kwargs: Any
) -> None:
    sandbox, real = await _both(apis, call, res, *args, **kwargs)
    if isinstance(real, ApiError) or isinstance(sandbox, ApiError):
        assert isinstance(sandbox, ApiError) and isinstance(real, ApiError), (
            f"sandbox {sandbox!r}, kube-apiserver {real!r}"
        )
        assert (sandbox.status, sandbox.reason) == (real.status, real.reason), f"{sandbox} vs {real}"
        return
    differences = _differences(res.kind, sandbox, real)
    assert differences == [], f"{res.kind} {call}: the sandbox differs from kube-apiserver:\n" + "\n".join(
        differences
    )


def _pod(name: str) -> dict[str, Any]:
    """A pod shaped like the controller's: labels, an owner, limits, a port, a fieldRef, a probe."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"training.kubeflow.org/job-name": "tftest"},
            "annotations": {"scheduling.k8s.io/group-name": "tftest"},
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "TFJob",
                    "name": "tftest",
                    "uid": "5f4c1a8e-0000-4000-8000-000000000001",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "restartPolicy": "OnFailure",
            "schedulerName": "volcano",
            "containers": [
                {
                    "name": "tensorflow",
                    "image": "busybox:1.37.0-glibc",
                    "command": ["sh", "-c", "sleep 30"],
                    "ports": [{"name": "tfjob-port", "containerPort": 2222}],
                    "env": [
                        {
                            "name": "POD_NAMESPACE",
                            "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                        }
                    ],
                    "resources": {"limits": {"cpu": "100m", "memory": "10Mi"}},
                    "readinessProbe": {"tcpSocket": {"port": 2222}},
                },
                {"name": "sidecar", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}},
            ],
            "volumes": [{"name": "config", "configMap": {"name": "settings"}}],
        },
    }


async def test_a_pod_is_defaulted_alike(apis: tuple[KubeApi, KubeApi]) -> None:
    await _assert_same(apis, "create", PODS, _pod("tftest-worker-0"), NAMESPACE)


async def test_a_headless_service_is_defaulted_alike(apis: tuple[KubeApi, KubeApi]) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "tftest-worker-0", "labels": {"training.kubeflow.org/job-name": "tftest"}},
        "spec": {
            "clusterIP": "None",
            "selector": {"training.kubeflow.org/job-name": "tftest"},
            "ports": [{"name": "tfjob-port", "port": 2222}],
        },
    }
    await _assert_same(apis, "create", SERVICES, service, NAMESPACE)


async def test_a_tfjob_is_defaulted_and_pruned_alike(apis: tuple[KubeApi, KubeApi]) -> None:
    job = load_seed("normal", "tftest", NAMESPACE)
    job["spec"]["unknownField"] = "pruned by the structural schema"
    await _assert_same(apis, "create", TFJOBS, job, NAMESPACE)


async def test_a_podgroup_and_its_status_are_stored_alike(apis: tuple[KubeApi, KubeApi]) -> None:
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "tftest"},
        # Zero values, as the controller writes them: a build of kube-apiserver whose schema
        # validation took "" for null refused this object.
        "spec": {"minMember": 4, "queue": "default", "priorityClassName": "", "minResources": {"cpu": "0"}},
    }
    await _assert_same(apis, "create", PODGROUPS_V1BETA1, podgroup, NAMESPACE)
    status = {"status": {"phase": "Inqueue", "running": 0, "succeeded": 0}}
    await _assert_same(
        apis, "patch", PODGROUPS_V1BETA1, "tftest", status, NAMESPACE,
        patch_type=PatchType.MERGE,
    )  # fmt: skip


async def test_a_pod_status_merge_patch_is_applied_alike(apis: tuple[KubeApi, KubeApi]) -> None:
    await _both(apis, "create", PODS, _pod("tftest-ps-0"), NAMESPACE)
    status = {
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.7",
            "conditions": [{"type": "Ready", "status": "True"}],
        }
    }
    await _assert_same(
        apis,
        "patch",
        PODS,
        "tftest-ps-0",
        status,
        NAMESPACE,
        patch_type=PatchType.MERGE,
        subresource="status",
    )


async def test_a_lease_and_a_configmap_are_stored_alike(apis: tuple[KubeApi, KubeApi]) -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "tfgang"},
        "spec": {
            "holderIdentity": "a",
            "leaseDurationSeconds": 15,
            "renewTime": "2026-01-01T00:00:00.000000Z",
        },
    }
    await _assert_same(apis, "create", LEASES, lease, NAMESPACE)
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings"},
        "data": {"a": "1"},
    }
    await _assert_same(apis, "create", CONFIGMAPS, configmap, NAMESPACE)


@pytest.mark.parametrize(
    ("what", "res", "body"),
    [
        (
            "a bad name",
            CONFIGMAPS,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_Valid"}},
        ),
        (
            "a pod without containers",
            PODS,
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty"}, "spec": {}},
        ),
        (
            "a TFJob whose replica count is a string",
            TFJOBS,
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "metadata": {"name": "stringly"},
                "spec": {"tfReplicaSpecs": {"Worker": {"replicas": "two", "template": {"spec": {}}}}},
            },
        ),
        (
            "a PodGroup whose queue is not a DNS name",
            PODGROUPS_V1BETA1,
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": "nameless-queue"},
                "spec": {"minMember": 1, "queue": "-"},
            },
        ),
    ],
)
async def test_an_invalid_object_is_refused_alike(
    apis: tuple[KubeApi, KubeApi], what: str, res: Resource, body: dict[str, Any]
) -> None:
    sandbox, real = await _both(apis, "create", res, body, NAMESPACE)
    assert isinstance(real, ApiError), f"kube-apiserver accepted {what}"
    assert isinstance(sandbox, ApiError), f"the sandbox accepted {what}"
    assert (sandbox.status, sandbox.reason) == (real.status, real.reason), f"{sandbox} vs {real}"


async def test_a_create_of_an_existing_name_conflicts_alike(apis: tuple[KubeApi, KubeApi]) -> None:
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "twice"}}
    await _both(apis, "create", CONFIGMAPS, configmap, NAMESPACE)
    await _assert_same(apis, "create", CONFIGMAPS, configmap, NAMESPACE)


async def test_a_create_asked_for_its_metadata_alone_answers_alike(apis: tuple[KubeApi, KubeApi]) -> None:
    for res, body in [
        (PODS, _pod("tftest-meta-0")),
        (SERVICES, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "tftest-meta-0"},
                    "spec": {"clusterIP": "None", "ports": [{"port": 2222}]}}),
    ]:  # fmt: skip
        sandbox, real = await _both(apis, "create", res, body, NAMESPACE, metadata_only=True)
        for answer in (sandbox, real):
            assert set(answer) == {"apiVersion", "kind", "metadata"}, "no spec, no status"
            assert (answer["apiVersion"], answer["kind"]) == ("v1", res.kind)
            assert answer["metadata"]["uid"] and answer["metadata"]["resourceVersion"]
        assert _differences(res.kind, sandbox, real) == []


async def _raw_get(api: KubeApi, path: str, accept: str) -> tuple[int, Any]:
    """One GET with the ``Accept`` header given, answered as the server put it on the wire."""
    client = api.client
    headers = await client.headers(accept)
    url = f"{client.host}{path}"
    async with client.session.get(url, headers=headers, **client.request_options) as response:
        return response.status, json.loads(await response.read())


@pytest.mark.parametrize(
    ("accept", "path"),
    [
        ("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "/configmaps/formed"),
        ("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1", "/configmaps/formed"),
        ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "/configmaps"),
        ("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "/configmaps"),
        ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "/configmaps/formed"),
        ("application/json;as=Nothing;g=meta.k8s.io;v=v1", "/configmaps/formed"),
        ("application/json;as=Nothing;g=meta.k8s.io;v=v1, application/json", "/configmaps/formed"),
    ],
)
async def test_answers_in_metadata_forms_are_negotiated_alike(
    apis: tuple[KubeApi, KubeApi], accept: str, path: str
) -> None:
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "formed"}}
    await _both(apis, "create", CONFIGMAPS, configmap, NAMESPACE)
    (sandbox_status, sandbox), (real_status, real) = [
        await _raw_get(api, f"/api/v1/namespaces/{NAMESPACE}{path}", accept) for api in apis
    ]
    assert sandbox_status == real_status, f"sandbox {sandbox}, kube-apiserver {real}"
    assert (sandbox["kind"], sandbox["apiVersion"]) == (real["kind"], real["apiVersion"])
    if real["kind"] == "Status":
        assert sandbox["reason"] == real["reason"]
    elif real["kind"] in ("PartialObjectMetadata", "ConfigMap"):
        assert _differences("ConfigMap", sandbox, real) == []
    else:
        assert real["kind"] == "PartialObjectMetadataList"
        assert len(sandbox["items"]) == len(real["items"]) >= 1
        assert {item["kind"] for item in sandbox["items"] + real["items"]} <= {"PartialObjectMetadata"}


async def test_a_list_and_a_watch_of_metadata_alone_answer_alike(apis: tuple[KubeApi, KubeApi]) -> None:
    labels = {"meta": "y"}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "meta-seen", "labels": labels}}
    configmap["data"] = {"big": "x" * 1000}
    await _both(apis, "create", CONFIGMAPS, configmap, NAMESPACE)
    listed, watched = [], []
    for api in apis:
        items, _ = await api.list_all(CONFIGMAPS, NAMESPACE, label_selector="meta=y", metadata_only=True)
        listed.append(items)
        events = []
        stream = api.watch(
            CONFIGMAPS, NAMESPACE, resource_version="0", timeout_seconds=1, label_selector="meta=y",
            metadata_only=True,
        )  # fmt: skip
        async with contextlib.aclosing(stream):
            async for event in stream:
                events.append(event)
        assert {event.type for event in events} <= {"ADDED", "BOOKMARK"}
        watched.append([event.object for event in events if event.type == "ADDED"])
    for objects in (*listed, *watched):
        [obj] = objects
        assert set(obj) == {"apiVersion", "kind", "metadata"}, "no data"
        assert (obj["apiVersion"], obj["kind"], obj["metadata"]["labels"]) == ("v1", "ConfigMap", labels)
    assert _differences("ConfigMap", listed[0][0], listed[1][0]) == []
    assert _differences("ConfigMap", watched[0][0], watched[1][0]) == []
