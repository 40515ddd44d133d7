"""Why is it pending? The TFJob says it in its Created condition, in one event, and so in
``kubectl describe tfjob``: Volcano's words for an unschedulable gang or a queue without room, and
the API's words for a pod it refuses to create. Run with the sandbox's real gang scheduler."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kube.patches import PatchType
from kube.resources import NODES, QUEUES_V1BETA1, Resource
from realcluster.kubectl import find_kubectl
from sandbox.kubectl import kubectl
from sandbox.testing import start_apiserver

from .cluster import Cluster, condition, eventually, simple_job
from .gang import gang_scheduler, node
from .operator import controller_config, running_controller

RBAC = "rbac.authorization.k8s.io/v1"
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)
RESOURCE_QUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota")
GRACE = 1.0  # the controller reports a reason once it has held this long


def _created_message(job: dict[str, Any]) -> str:
    found = condition(job, "Created")
    return str((found or {}).get("message") or "")


async def _message_containing(cluster: Cluster, name: str, *parts: str, within: float = 30.0) -> str:
    async def said() -> str | None:
        message = _created_message(await cluster.job(name))
        return message if all(part in message for part in parts) else None

    return await eventually(said, within, what=f"{name}'s Created condition to say {parts}")


async def _the_failed_create_event(cluster: Cluster, name: str) -> dict[str, Any]:
    """The one FailedCreatePod event about the job (the recorder sends it in the background)."""

    async def found() -> list[dict[str, Any]] | None:
        return [e for e in await cluster.events(name) if e.get("reason") == "FailedCreatePod"] or None

    (event,) = await eventually(found, 10, what=f"{name}'s FailedCreatePod event")
    return event


async def _message_back_to_plain(cluster: Cluster, name: str, within: float = 30.0) -> None:
    async def plain() -> bool:
        return _created_message(await cluster.job(name)) == f"TFJob {name} is created."

    await eventually(plain, within, what=f"{name}'s Created condition back to upstream's message")


async def test_an_unschedulable_gang_is_explained_until_it_is_admitted(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    host = f"gpu-{uuid.uuid4().hex[:6]}"
    taint = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    config = controller_config(namespace=ns, pending_reason_grace_seconds=GRACE)
    async with (
        gang_scheduler(apiserver, [node(host, taints=[taint])]),
        running_controller(controller_kubeconfig, config),
    ):
        await cluster.create_job(simple_job("tainted", ns, workers=2))
        message = await _message_containing(
            cluster, "tainted", "tasks in gang unschedulable", "untolerated taint {gpu: true}"
        )
        assert message.startswith("TFJob tainted is created. Not running yet: PodGroup tainted is Inqueue")
        created = condition(await cluster.job("tainted"), "Created")
        assert (created or {}).get("reason") == "TFJobCreated"
        assert (created or {}).get("status") == "True"

        # One Warning event for this reason, not one per pass (a busy machine may first have
        # reported a gang still being created: another message, another event). The recorder
        # sends events in the background, so the event may land a moment after the status.
        async def pending_events() -> list[dict[str, Any]] | None:
            found = [
                e
                for e in await cluster.events("tainted")
                if e.get("reason") == "PodGroupPending" and "untolerated taint" in e.get("message", "")
            ]
            return found or None

        pending = await eventually(pending_events, 10, what="the PodGroupPending event")
        assert [e["type"] for e in pending] == ["Warning"]

        described = await kubectl(
            find_kubectl(), apiserver.kubeconfig, ["describe", "tfjob", "tainted", "-n", ns]
        )
        assert described.code == 0, described.stderr
        assert "untolerated taint {gpu: true}" in described.stdout
        assert "PodGroupPending" in described.stdout

        # The node is untainted: Volcano binds the gang and the job stops saying it waits.
        await cluster.api.patch(NODES, host, {"spec": {"taints": []}}, patch_type=PatchType.MERGE)
        await _message_back_to_plain(cluster, "tainted")


async def test_a_queue_without_room_is_explained_while_the_pods_are_held_back(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    queue = f"tight-{uuid.uuid4().hex[:6]}"
    job = simple_job("crowded", ns, workers=3, run_policy={"schedulingPolicy": {"queue": queue}})
    for spec in job["spec"]["tfReplicaSpecs"].values():
        spec["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    config = controller_config(namespace=ns, pending_reason_grace_seconds=GRACE)
    async with (
        gang_scheduler(apiserver, [node(f"big-{uuid.uuid4().hex[:6]}")]) as admin,
        running_controller(controller_kubeconfig, config),
    ):
        await admin.create(
            QUEUES_V1BETA1,
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": queue},
                "spec": {"weight": 1, "reclaimable": True, "capability": {"cpu": "1"}},
            },
        )
        await cluster.create_job(job)
        message = await _message_containing(
            cluster, "crowded", "queue resource quota insufficient: insufficient cpu"
        )
        assert "PodGroup crowded is Pending" in message
        assert await cluster.pods("crowded") == {}  # held back: no pods while the gang is not admitted

        await admin.patch(
            QUEUES_V1BETA1, queue, {"spec": {"capability": {"cpu": "10"}}}, patch_type=PatchType.MERGE
        )

        async def three_pods() -> bool:
            return len(await cluster.pods("crowded")) == 3

        await eventually(three_pods, 30, what="the pods once the queue has room")
        await _message_back_to_plain(cluster, "crowded")


async def test_a_pod_the_api_refuses_is_explained_on_the_tfjob(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    job = simple_job("refused", ns)
    # TFJob validation looks at the tensorflow container only; the API server checks every name.
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"].append(
        {"name": "Side_Car", "image": "busybox:1.37.0-glibc"}
    )
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(job)
        await eventually(lambda: cluster.podgroup("refused"), 10, what="PodGroup refused")
        await cluster.set_podgroup_phase("refused", "Inqueue")
        message = await _message_containing(
            cluster, "refused", "pod refused-worker-0 cannot be created", "Side_Car"
        )
        assert message.startswith("TFJob refused is created. pod refused-worker-0 cannot be created: 422 ")

        event = await _the_failed_create_event(cluster, "refused")
        assert event["type"] == "Warning" and "Side_Car" in event["message"]


@pytest.mark.only_with_real_volcano("Volcano's admission refuses a PodGroup whose queue is missing")
async def test_a_podgroup_volcano_refuses_is_explained_on_the_tfjob_until_its_queue_exists(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    queue = f"missing-{uuid.uuid4().hex[:6]}"
    job = simple_job("unqueued", ns, run_policy={"schedulingPolicy": {"queue": queue}})
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(job)
        message = await _message_containing(
            cluster,
            "unqueued",
            "PodGroup unqueued cannot be created",
            f'unable to find queue: queue.scheduling.volcano.sh "{queue}" not found',
        )
        assert message.startswith("TFJob unqueued is created. PodGroup unqueued cannot be created: 400 ")
        assert await cluster.podgroup("unqueued") is None

        await cluster.api.create(
            QUEUES_V1BETA1,
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
             "metadata": {"name": queue}, "spec": {"weight": 1}},
        )  # fmt: skip
        try:
            await eventually(
                lambda: cluster.podgroup("unqueued"), 60, what="the PodGroup once its queue exists"
            )
            await _message_back_to_plain(cluster, "unqueued", within=60)
        finally:
            await cluster.api.delete(QUEUES_V1BETA1, queue)


@pytest.mark.only_on_kube_apiserver("the sandbox has no ResourceQuota admission")
async def test_a_pod_over_the_namespace_quota_is_explained_on_the_tfjob_until_the_quota_allows_it(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "no-pods"},
        "spec": {"hard": {"pods": "0"}},
    }
    await cluster.api.create(RESOURCE_QUOTAS, quota, ns)
    # kube-apiserver's ResourceQuota admission enforces a quota by its status alone, which
    # kube-controller-manager's quota controller fills in. That controller looks for new resources
    # every 30 s and, when it finds some (another test's CRDs), holds its workers until its
    # informers for them have synced: a quota created then waited over 90 s for its status on a
    # loaded machine (kubernetes/kubernetes#129757 is the same wait in Kubernetes' own e2e tests).
    # So the test writes the status that controller computes (no pods in a new namespace), as the
    # tests write the pods' statuses for the kubelet; admission is kube-apiserver's own.
    counted = {"status": {"hard": {"pods": "0"}, "used": {"pods": "0"}}}
    await cluster.api.patch(
        RESOURCE_QUOTAS, "no-pods", counted, ns, patch_type=PatchType.MERGE, subresource="status"
    )
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(simple_job("quota", ns))
        await eventually(lambda: cluster.podgroup("quota"), 10, what="PodGroup quota")
        await cluster.set_podgroup_phase("quota", "Inqueue")
        message = await _message_containing(
            cluster, "quota", "pod quota-worker-0 cannot be created", "exceeded quota: no-pods"
        )
        assert message.startswith("TFJob quota is created. pod quota-worker-0 cannot be created: 403 ")

        event = await _the_failed_create_event(cluster, "quota")
        assert event["type"] == "Warning" and "exceeded quota" in event["message"]

        await cluster.api.delete(RESOURCE_QUOTAS, "no-pods", ns)

        async def one_pod() -> bool:
            return len(await cluster.pods("quota")) == 1

        await eventually(one_pod, 60, what="the pod once the quota is gone")
        await _message_back_to_plain(cluster, "quota")


async def test_a_pod_create_forbidden_to_the_controller_is_explained_on_the_tfjob() -> None:
    """A 403 (here RBAC: the controller may do everything but create pods; a ResourceQuota or an
    admission webhook answers the same way) reaches the Created condition too."""
    with start_apiserver(authorize=True) as server:
        _token, kubeconfig = server.add_user("tfgang-controller")
        everything_but_creating_pods = [
            {"apiGroups": ["kubeflow.org"], "resources": ["tfjobs", "tfjobs/status"], "verbs": ["*"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]},
            {"apiGroups": [""], "resources": ["services", "events"], "verbs": ["*"]},
            {"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups"], "verbs": ["*"]},
            {
                "apiGroups": ["scheduling.k8s.io"],
                "resources": ["priorityclasses"],
                "verbs": ["list", "watch"],
            },
        ]
        async with Cluster.connect(str(server.kubeconfig), "default") as admin:
            await admin.api.create(
                CLUSTER_ROLES,
                {
                    "apiVersion": RBAC,
                    "kind": "ClusterRole",
                    "metadata": {"name": "ctl"},
                    "rules": everything_but_creating_pods,
                },
            )
            await admin.api.create(
                CLUSTER_ROLE_BINDINGS,
                {
                    "apiVersion": RBAC,
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": "ctl"},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": "ctl",
                    },
                    "subjects": [{"kind": "User", "name": "tfgang-controller"}],
                },
            )
            async with running_controller(str(kubeconfig), controller_config(namespace="default")):
                await admin.create_job(simple_job("denied", "default"))
                await eventually(lambda: admin.podgroup("denied"), 10, what="PodGroup denied")
                await admin.set_podgroup_phase("denied", "Inqueue")
                message = await _message_containing(admin, "denied", "pod denied-worker-0 cannot be created")
                assert "403 Forbidden" in message
                assert 'cannot create resource "pods"' in message
