"""Kueue, unchanged: driven the way Kueue drives a TFJob, with no Kueue installed (docs/migration.md).

Kueue's webhook makes a queued TFJob suspended at creation; on admission one update injects the
flavour's node selector and tolerations plus its labels and annotations into the pod templates
and unsuspends; on preemption one update suspends again and restores the templates. Every update
goes through tfgang's validating webhook. A ``managedBy: kueue.x-k8s.io/multikueue`` job belongs to
MultiKueue and is never touched.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from typing import Any

from controller.resources import TFJOBS
from kube.patches import PatchType
from kube.resources import PODS

from .cluster import Cluster, condition, controller_writes, eventually, last_state, simple_job
from .gang import gang_scheduler, node
from .operator import CONTROLLER_USER, controller_config, running_controller

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def _admitted(job: dict[str, Any], pool: str) -> dict[str, Any]:
    """What Kueue's admission does: the flavour's scheduling directives in, suspend off."""
    changed = copy.deepcopy(job)
    for rtype, spec in changed["spec"]["tfReplicaSpecs"].items():
        template = spec["template"]
        metadata = template.setdefault("metadata", {})
        metadata.setdefault("labels", {})["kueue.x-k8s.io/podset"] = rtype.lower()
        metadata.setdefault("annotations", {})["kueue.x-k8s.io/workload"] = f"tfjob-{job['metadata']['name']}"
        template["spec"]["nodeSelector"] = {"pool": pool}
        template["spec"]["tolerations"] = [
            {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
        ]
    changed["spec"]["runPolicy"]["suspend"] = False
    return changed


def _restored(job: dict[str, Any], original: dict[str, Any]) -> dict[str, Any]:
    """What Kueue's preemption does: suspend on, the templates as they were before admission."""
    changed = copy.deepcopy(job)
    for rtype, spec in changed["spec"]["tfReplicaSpecs"].items():
        spec["template"] = copy.deepcopy(original["spec"]["tfReplicaSpecs"][rtype]["template"])
    changed["spec"]["runPolicy"]["suspend"] = True
    return changed


async def _replace(cluster: Cluster, job: dict[str, Any]) -> dict[str, Any]:
    """A full update, as Kueue's client sends it (through the validating webhook)."""
    current = await cluster.job(job["metadata"]["name"])
    body = copy.deepcopy(job)
    body["metadata"] = current["metadata"]
    return await cluster.api.replace(TFJOBS, job["metadata"]["name"], body, cluster.namespace)


async def test_a_suspended_job_runs_with_the_templates_kueue_gave_it_and_stops_when_preempted(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    host = f"pool-a-{uuid.uuid4().hex[:6]}"
    taint = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    job = simple_job("queued", ns, workers=2, run_policy={"suspend": True})
    job["metadata"]["labels"] = {QUEUE_LABEL: "team-a"}
    async with (
        gang_scheduler(apiserver, [node(host, taints=[taint], labels={"pool": "a"})]),
        running_controller(controller_kubeconfig, controller_config(namespace=ns)),
    ):
        original = await cluster.create_job(job)
        await eventually(
            lambda: _state_is(cluster, "queued", "Suspended"),
            what="the job created suspended to be Suspended",
        )
        assert await cluster.podgroup("queued") is None and await cluster.pods("queued") == {}

        # Admission: the only node is tainted and labelled pool=a; only Kueue's changes let pods fit.
        await _replace(cluster, _admitted(original, "a"))

        async def bound() -> dict[str, dict[str, Any]] | None:
            pods = await cluster.pods("queued")
            placed = len(pods) == 2 and all(p["spec"].get("nodeName") == host for p in pods.values())
            return pods if placed else None

        try:
            pods = await eventually(bound, 30, what="both pods bound to the pool-a node")
        except AssertionError as timed_out:
            raise AssertionError(f"{timed_out}; {await _placement(cluster, 'queued')}") from None
        for pod in pods.values():
            assert pod["spec"]["nodeSelector"] == {"pool": "a"}
            assert {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in pod[
                "spec"
            ]["tolerations"]
            assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "worker"
            assert pod["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == "tfjob-queued"
        resumed = await cluster.job("queued")
        assert condition(resumed, "Suspended")["reason"] == "TFJobResumed"  # type: ignore[index]
        assert resumed["status"].get("startTime")

        # Preemption: suspended again, templates restored; every pod, service and the PodGroup go.
        async with cluster.reaping_terminating_pods():
            await _replace(cluster, _restored(await cluster.job("queued"), original))

            async def all_gone() -> bool:
                return (
                    not await cluster.pods("queued")
                    and not await cluster.services("queued")
                    and await cluster.podgroup("queued") is None
                )

            await eventually(all_gone, 30, what="the preempted job's children deleted")
        assert last_state(await cluster.job("queued")) == "Suspended"


async def _placement(cluster: Cluster, name: str) -> str:
    """What a wait for the pods' binding saw last: the PodGroup's phase, each pod's node."""
    podgroup = await cluster.podgroup(name) or {}
    nodes = {pod: body["spec"].get("nodeName") for pod, body in (await cluster.pods(name)).items()}
    return f"PodGroup phase {podgroup.get('status', {}).get('phase')}, pods on nodes {nodes}"


async def _state_is(cluster: Cluster, name: str, state: str) -> bool:
    return last_state(await cluster.job(name)) == state


async def test_a_multikueue_job_is_never_touched(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    job = simple_job("remote", ns, workers=2, run_policy={"managedBy": "kueue.x-k8s.io/multikueue"})
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(job)
        # MultiKueue mirrors the worker cluster's status onto the manager's copy; tfgang keeps out.
        mirrored = {
            "conditions": [{"type": "Created", "status": "True", "reason": "TFJobCreated", "message": "m"}]
        }
        await cluster.api.patch(
            TFJOBS, "remote", {"status": mirrored}, ns, patch_type=PatchType.MERGE, subresource="status"
        )
        # A pod of that job (as if a worker cluster's copy ran here) is not mutated either.
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "remote-worker-0",
                "labels": {
                    "training.kubeflow.org/operator-name": "tfjob-controller",
                    "training.kubeflow.org/job-name": "remote",
                    "training.kubeflow.org/replica-type": "worker",
                    "training.kubeflow.org/replica-index": "0",
                },
            },
            "spec": {"containers": [{"name": "tensorflow", "image": "busybox:1.37.0-glibc"}]},
        }
        created = await cluster.api.create(PODS, pod, ns)
        assert "env" not in created["spec"]["containers"][0]
        assert "scheduling.k8s.io/group-name" not in (created["metadata"].get("annotations") or {})
        await asyncio.sleep(2)  # the controller has seen the job, and must have done nothing
        assert (await cluster.job("remote"))["status"] == mirrored
        assert await cluster.podgroup("remote") is None
        assert [r for r in controller_writes(apiserver, CONTROLLER_USER, ns)] == []
