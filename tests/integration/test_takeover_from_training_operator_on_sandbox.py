"""Taking over from training-operator v1.9 without restarting anything (docs/migration.md).

The cluster holds exactly what the operator created and drove (``training_operator.py``): pods
with TF_CONFIG and the Volcano annotations, headless Services, the PodGroup, all owned by the
TFJob, and the status the operator wrote. The operator is gone (it never ran here); tfgang's
controller starts. Nothing is deleted or recreated (the uids stay the same), the status keeps its
history, the job finishes as it would have, a finished job stays finished and its TTL counts from
its completionTime.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from controller.resources import TFJOBS
from kube.errors import NotFound
from kube.patches import PatchType
from kube.resources import PODGROUPS_V1BETA1, PODS, SERVICES

from . import training_operator as operator_v19
from .cluster import Cluster, condition, container_status, controller_writes, eventually, wait_for_state
from .operator import CONTROLLER_USER, controller_config, running_controller


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


async def _install(cluster: Cluster, job: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """Create the job and put the operator's status on it; the job as stored, with its uid."""
    created = await cluster.create_job(job)
    await cluster.api.patch(
        TFJOBS,
        job["metadata"]["name"],
        {"status": status},
        cluster.namespace,
        patch_type=PatchType.MERGE,
        subresource="status",
    )
    return created


async def _uids(cluster: Cluster, job_name: str) -> dict[str, str]:
    found = {f"pod/{n}": p["metadata"]["uid"] for n, p in (await cluster.pods(job_name)).items()}
    found |= {f"service/{n}": s["metadata"]["uid"] for n, s in (await cluster.services(job_name)).items()}
    group = await cluster.podgroup(job_name)
    if group is not None:
        found[f"podgroup/{job_name}"] = group["metadata"]["uid"]
    return found


def _creates_and_deletes(apiserver: Any, namespace: str) -> list[tuple[str, str, str]]:
    return [
        (record.verb, record.resource, record.name)
        for record in controller_writes(apiserver, CONTROLLER_USER, namespace)
        if record.verb in ("create", "delete") and record.resource in ("pods", "services", "podgroups")
    ]


async def test_a_running_training_operator_job_is_adopted_and_finishes_without_recreating_anything(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    # managedBy naming training-operator: tfgang's, like unset.
    job = operator_v19.tfjob("legacy", ns, {"managedBy": "kubeflow.org/training-operator"})
    started = _stamp(datetime.now(UTC) - timedelta(minutes=5))
    job = await _install(cluster, job, operator_v19.running_status(job, started))
    group = operator_v19.podgroup(job)
    await cluster.api.create(PODGROUPS_V1BETA1, group, ns)
    await cluster.api.patch(
        PODGROUPS_V1BETA1,
        "legacy",
        {"status": {"phase": "Running", "running": 3}},
        ns,
        patch_type=PatchType.MERGE,
    )
    for service in operator_v19.services(job):
        await cluster.api.create(SERVICES, service, ns)
    for pod in operator_v19.pods(job):
        await cluster.api.create(PODS, pod, ns)
    names = sorted(await cluster.pods("legacy"))
    assert names == ["legacy-ps-0", "legacy-worker-0", "legacy-worker-1"]
    await cluster.run_pods(names)
    before = await _uids(cluster, "legacy")
    assert len(before) == 7  # 3 pods, 3 services, the PodGroup
    stored = await cluster.pods("legacy")
    operator_tf_config = {n: p["spec"]["containers"][0]["env"] for n, p in stored.items()}
    # tfgang's webhook (installed while the operator's pods exist) computes the very same TF_CONFIG.
    assert operator_tf_config == {
        p["metadata"]["name"]: p["spec"]["containers"][0]["env"] for p in operator_v19.pods(job)
    }
    history = (await cluster.job("legacy"))["status"]

    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await asyncio.sleep(2)  # the controller lists, plans every job, and must find nothing to do
        assert _creates_and_deletes(apiserver, ns) == []
        adopted = (await cluster.job("legacy"))["status"]
        assert adopted["conditions"] == history["conditions"]
        assert adopted["startTime"] == started
        assert adopted["replicaStatuses"] == {"PS": {"active": 1}, "Worker": {"active": 2}}

        # An in-place restart (OnFailure) and then worker 0 done: the job succeeds as it would have.
        await cluster.set_pod("legacy-worker-1", "Running", container_status("running", restart_count=1))
        await cluster.finish_pods(["legacy-worker-0"])
        finished = await wait_for_state(cluster, "legacy", "Succeeded")

        async def podgroup_gone() -> bool:
            return await cluster.podgroup("legacy") is None

        await eventually(podgroup_gone, what="the PodGroup deleted once the job finished (upstream does)")

    status = finished["status"]
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("Created", "True"),
        ("Running", "False"),
        ("Succeeded", "True"),
    ]
    for kept in ("Created", "Running"):
        assert condition(finished, kept)["lastTransitionTime"] == started  # type: ignore[index]
    assert status["startTime"] == started
    assert status["completionTime"] >= started
    # Nothing was recreated: every pod and service still has the uid the operator's object had;
    # the only removal is the finished job's PodGroup, and cleanPodPolicy None keeps the pods (D7).
    after = await _uids(cluster, "legacy")
    assert after == {key: uid for key, uid in before.items() if not key.startswith("podgroup/")}
    assert _creates_and_deletes(apiserver, ns) == [("delete", "podgroups", "legacy")]
    assert {n: p["spec"]["containers"][0]["env"] for n, p in (await cluster.pods("legacy")).items()} == (
        operator_tf_config
    )


async def test_a_finished_training_operator_job_stays_finished_and_its_ttl_counts_from_completion(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    ttl = 60
    completed_at = datetime.now(UTC) - timedelta(seconds=ttl - 6)  # expires 6 s from now
    job = operator_v19.tfjob("done", ns, {"ttlSecondsAfterFinished": ttl})
    status = operator_v19.succeeded_status(
        job, _stamp(completed_at - timedelta(minutes=10)), _stamp(completed_at)
    )
    job = await _install(cluster, job, status)
    # cleanPodPolicy None: the PS was left running and its Service stays (upstream v1.9, D7).
    ps = operator_v19.pods(job)[0]
    await cluster.api.create(PODS, ps, ns)
    await cluster.api.create(SERVICES, operator_v19.services(job)[0], ns)
    await cluster.run_pods(["done-ps-0"])
    recorded = (await cluster.job("done"))["status"]

    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await asyncio.sleep(2)
        still = await cluster.job("done")
        assert still["status"] == recorded  # finished is final: no condition, count or time moved
        assert _creates_and_deletes(apiserver, ns) == []
        assert list(await cluster.pods("done")) == ["done-ps-0"]

        async def deleted() -> bool:
            try:
                await cluster.job("done")
            except NotFound:
                return True
            return False

        # 6 s after the start, not 60 s after the adoption.
        await eventually(deleted, within=30, what="the job deleted at completionTime + ttl")
        assert time.time() >= (completed_at + timedelta(seconds=ttl)).timestamp() - 1
