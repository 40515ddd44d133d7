"""D18 on the three API servers, with a real gang scheduler (the real Volcano's beside v1.37, the
sandbox's elsewhere): a collective preempted by a higher-priority gang of its queue restarts as a
whole gang without touching ``backoffLimit: 0`` and succeeds; on the real Volcano also a collective
whose room another queue reclaims; a PS job whose worker is evicted replaces only that worker.

No kubelet runs here: the test plays it, writing pod phases; a running pod whose deletion was asked
for ends Failed with exit code 143 (SIGTERM) and is removed a few seconds later, as a kubelet does,
so the controller sees it terminating (and its ``DisruptionTarget`` condition) first.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kube.errors import NotFound
from kube.resources import PODS, PRIORITY_CLASSES, QUEUES_V1BETA1

from .cluster import Cluster, condition, container_status, eventually, last_state, simple_job
from .gang import gang_scheduler, node, runs_real_volcano, volcano_actions
from .operator import controller_config, running_controller

TERMINATION_SECONDS = 3.0  # how long an evicted pod stays terminating before the "kubelet" removes it


@contextlib.asynccontextmanager
async def kubelet_removing_terminated_pods(cluster: Cluster) -> AsyncIterator[None]:
    first_seen: dict[str, float] = {}

    async def reap() -> None:
        while True:
            listed = await cluster.api.list(PODS, cluster.namespace)
            for pod in listed.get("items") or ():
                meta = pod["metadata"]
                if not meta.get("deletionTimestamp"):
                    continue
                if meta["uid"] not in first_seen:
                    first_seen[meta["uid"]] = time.monotonic()
                    # The container is stopped with SIGTERM: the pod ends Failed, exit code 143,
                    # which upstream counts as a failure (backoffLimit: 0 fails the job).
                    if (pod.get("status") or {}).get("phase") == "Running":
                        with contextlib.suppress(NotFound):
                            stopped = container_status("terminated", exit_code=143)
                            await cluster.set_pod(meta["name"], "Failed", stopped)
                if time.monotonic() - first_seen[meta["uid"]] >= TERMINATION_SECONDS:
                    await cluster.force_delete_pod(meta["name"])
            await asyncio.sleep(0.2)

    task = asyncio.create_task(reap())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _with_cpu(job: dict[str, Any], cpu: str) -> dict[str, Any]:
    for spec in job["spec"]["tfReplicaSpecs"].values():
        spec["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": cpu, "memory": "10Mi"}}
    return job


async def _bound_pods(cluster: Cluster, job_name: str, count: int, within: float = 60.0) -> dict[str, str]:
    """The job's ``count`` pods once all are bound and none is going: name -> uid."""

    async def bound() -> dict[str, str] | None:
        pods = await cluster.pods(job_name)
        ready = {
            name: pod["metadata"]["uid"]
            for name, pod in pods.items()
            if pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp")
        }
        return ready if len(ready) == count == len(pods) else None

    return await eventually(bound, within, what=f"{count} bound pods of {job_name}")


async def _run(cluster: Cluster, names: list[str]) -> None:
    for name in names:
        await cluster.set_pod(name, "Running", container_status("running"))


async def _state(cluster: Cluster, job_name: str, state: str, within: float = 60.0) -> dict[str, Any]:
    async def reached() -> dict[str, Any] | None:
        job = await cluster.job(job_name)
        return job if last_state(job) == state else None

    return await eventually(reached, within, what=f"{job_name} in state {state}")


# The real Volcano's actions for these scenarios (``volcano_actions``), each with the chart's
# default plugins; the sandbox's scheduler runs its fixed set (the same plugins' checks, with
# preempt inside a queue and no reclaim), whatever it is told.
PREEMPT_ACTIONS = "enqueue, allocate, preempt, backfill"
"""Volcano's ``preempt`` evicts lower-priority jobs of the preemptor's own queue, for a job that
enqueue admitted and allocate could not place."""
RECLAIM_ACTIONS = "enqueue, allocate, reclaim, backfill"
"""Volcano's ``reclaim`` takes room back across queues for a queue below its deserved share, from
reclaimable queues above theirs (``proportion`` computes the shares)."""


def _urgent_job(ns: str, cpu: str, priority_class: str | None, queue: str | None) -> dict[str, Any]:
    policy: dict[str, Any] = {}
    if queue:
        policy["queue"] = queue
    if priority_class:
        policy["priorityClass"] = priority_class  # the PodGroup's: what Volcano ranks jobs by
    urgent = _with_cpu(simple_job("urgent", ns, workers=1, run_policy={"schedulingPolicy": policy}), cpu)
    if priority_class:
        urgent["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = priority_class
    return urgent


async def _collective_restarts_for_urgent_and_succeeds(
    cluster: Cluster, admin: Any, collective: dict[str, Any], urgent: dict[str, Any]
) -> None:
    """The collective (2 workers of 400 CPU) runs; ``urgent`` comes, finds no node with room and
    the scheduler evicts the collective for it; the collective restarts as a whole gang, never
    Failed, waits while the urgent job runs (its gang no longer fits beside it), then runs again
    and succeeds."""
    ns = cluster.namespace
    await cluster.create_job(collective)
    first = await _bound_pods(cluster, "collective", 2)
    await _run(cluster, sorted(first))
    await _state(cluster, "collective", "Running")

    await cluster.create_job(urgent)

    async def restarting() -> dict[str, Any] | None:
        job = await cluster.job("collective")
        assert condition(job, "Failed") is None, job["status"]
        found = condition(job, "Restarting")
        return job if found and found.get("reason") == "PreemptionByScheduler" else None

    job = await eventually(restarting, 90, what="collective Restarting after its eviction")
    message = str(condition(job, "Restarting")["message"])  # type: ignore[index]
    assert message.startswith(f"TFJob {ns}/collective is restarting as a gang because pod collective-worker-")
    assert "volcano: preempting to accommodate a higher priority pod" in message
    assert job["status"]["disruptions"] == 1
    assert "restartCounts" not in job["status"]

    # The urgent job runs while the collective's gang waits to be admitted again.
    (urgent_pod,) = await _bound_pods(cluster, "urgent", 1, within=90)
    await _run(cluster, [urgent_pod])
    await cluster.set_pod(urgent_pod, "Succeeded", container_status("terminated", exit_code=0))
    await _state(cluster, "urgent", "Succeeded")

    # Then every pod of the collective is new, the gang runs and succeeds.
    second = await _bound_pods(cluster, "collective", 2, within=90)
    assert sorted(second) == sorted(first)
    assert not set(second.values()) & set(first.values())
    await _run(cluster, sorted(second))
    await _state(cluster, "collective", "Running")
    await cluster.set_pod("collective-worker-0", "Succeeded", container_status("terminated", exit_code=0))
    done = await _state(cluster, "collective", "Succeeded")
    assert done["status"]["disruptions"] == 1
    assert "gangRestart" not in done["status"]
    assert "restartCounts" not in done["status"]
    assert condition(done, "Failed") is None


async def _create_open_queue(admin: Any, name: str) -> None:
    """A queue of weight 1, reclaimable, once Volcano's controller has opened it (its admission
    refuses a PodGroup in a queue that is not Open)."""
    await admin.create(
        QUEUES_V1BETA1,
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
         "metadata": {"name": name}, "spec": {"weight": 1, "reclaimable": True}},
    )  # fmt: skip

    async def opened() -> bool:
        queue = await admin.get(QUEUES_V1BETA1, name)
        return (queue.get("status") or {}).get("state") == "Open"

    await eventually(opened, 30, what=f"queue {name} Open")


async def test_a_preempted_collective_restarts_as_a_gang_without_touching_backoff_and_succeeds(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    """Preemption within one queue (``default``): two nodes of 500 CPU, a worker of the collective
    on each; a higher-priority job of 150 CPU fits on neither. The queue and the cluster have
    room for it (800 + 150 of 1000 CPU), so enqueue admits it, allocate cannot place it, and
    preempt evicts the collective. On one full node ``proportion`` would never admit the urgent
    job (its queue's 800 + 300 > 1000): no admission, no preemption, in Volcano as in the sandbox."""
    ns = cluster.namespace
    urgent_class = f"urgent-{uuid.uuid4().hex[:6]}"
    collective = _with_cpu(simple_job("collective", ns, workers=2, run_policy={"backoffLimit": 0}), "400")
    nodes = [node(f"preempt-{urgent_class}-{i}") for i in range(2)]
    half = {"cpu": "500", "memory": "2000Gi", "pods": "500"}
    with volcano_actions(apiserver, PREEMPT_ACTIONS):
        async with (
            gang_scheduler(apiserver, nodes, capacity=half) as admin,
            running_controller(controller_kubeconfig, controller_config(namespace=ns)),
            kubelet_removing_terminated_pods(cluster),
        ):
            await admin.create(
                PRIORITY_CLASSES,
                {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                 "metadata": {"name": urgent_class}, "value": 1000},
            )  # fmt: skip
            try:
                urgent = _urgent_job(ns, "150", urgent_class, queue=None)
                await _collective_restarts_for_urgent_and_succeeds(cluster, admin, collective, urgent)
            finally:
                with contextlib.suppress(NotFound):
                    await admin.delete(PRIORITY_CLASSES, urgent_class)


@pytest.mark.only_with_real_volcano(
    "reclaim across queues by deserved share; the sandbox's scheduler never reclaims"
)
async def test_a_collective_over_its_queues_share_is_reclaimed_by_another_queue_and_restarts_as_a_gang(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    """Reclaim across two queues of equal weight, no priorities: the collective fills the node
    (800 of 1000 CPU) in queue A; a job of queue B asks for 300. ``proportion`` then deserves A
    700 and B 300, so A is over its share and B may take it back: Volcano's reclaim evicts a
    worker of the collective (the gang plugin refuses to break a gang, but its vote is in the first
    tier and says nothing; ``proportion``'s in the second decides)."""
    ns = cluster.namespace
    suffix = uuid.uuid4().hex[:6]
    queue_a, queue_b = f"batch-{suffix}", f"urgent-{suffix}"
    collective = _with_cpu(
        simple_job(
            "collective", ns, workers=2,
            run_policy={"backoffLimit": 0, "schedulingPolicy": {"queue": queue_a}},
        ),
        "400",
    )  # fmt: skip
    with volcano_actions(apiserver, RECLAIM_ACTIONS):
        async with (
            gang_scheduler(apiserver, [node(f"reclaim-{suffix}")]) as admin,
            running_controller(controller_kubeconfig, controller_config(namespace=ns)),
            kubelet_removing_terminated_pods(cluster),
        ):
            await _create_open_queue(admin, queue_a)
            await _create_open_queue(admin, queue_b)
            urgent = _urgent_job(ns, "300", None, queue=queue_b)
            await _collective_restarts_for_urgent_and_succeeds(cluster, admin, collective, urgent)


async def test_a_ps_job_whose_worker_is_evicted_replaces_only_that_worker(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    job = simple_job("withps", ns, workers=2, ps=1, run_policy={"backoffLimit": 0})
    async with (
        gang_scheduler(apiserver, [node(f"evict-{uuid.uuid4().hex[:6]}")]),
        running_controller(controller_kubeconfig, controller_config(namespace=ns)),
        kubelet_removing_terminated_pods(cluster),
    ):
        await cluster.create_job(job)
        first = await _bound_pods(cluster, "withps", 3)
        await _run(cluster, sorted(first))
        await _state(cluster, "withps", "Running")

        # An eviction as kube-apiserver v1.20 carries it out: a graceful delete, no condition.
        await cluster.api.delete(PODS, "withps-worker-1", ns)

        async def replaced() -> dict[str, str] | None:
            pods = await cluster.pods("withps")
            uids = {name: pod["metadata"]["uid"] for name, pod in pods.items()}
            worker = uids.get("withps-worker-1")
            return uids if len(uids) == 3 and worker and worker != first["withps-worker-1"] else None

        now = await eventually(replaced, 60, what="withps-worker-1 replaced")
        assert now["withps-ps-0"] == first["withps-ps-0"]
        assert now["withps-worker-0"] == first["withps-worker-0"]
        second = await _bound_pods(cluster, "withps", 3)
        await _run(cluster, ["withps-worker-1"])
        running = await _state(cluster, "withps", "Running")
        assert condition(running, "Failed") is None
        assert "gangRestart" not in running["status"]
        assert "restartCounts" not in running["status"]
        # Seen terminating over several passes, counted once; forgotten once it is gone.
        assert running["status"]["disruptions"] == 1
        assert "disruptedPods" not in running["status"]
        assert second["withps-worker-1"] == now["withps-worker-1"]


@pytest.mark.only_on_kube_apiserver("the Eviction API (pods/eviction); the sandbox serves none")
async def test_a_collective_whose_worker_is_evicted_through_the_eviction_api_restarts_as_a_gang(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    job = simple_job("evicted", ns, workers=2, run_policy={"backoffLimit": 0})
    async with (
        gang_scheduler(apiserver, [node(f"evict-{uuid.uuid4().hex[:6]}")]),
        running_controller(controller_kubeconfig, controller_config(namespace=ns)),
        kubelet_removing_terminated_pods(cluster),
    ):
        await cluster.create_job(job)
        first = await _bound_pods(cluster, "evicted", 2)
        await _run(cluster, sorted(first))
        await _state(cluster, "evicted", "Running")

        eviction = {
            "apiVersion": "policy/v1beta1",
            "kind": "Eviction",
            "metadata": {"name": "evicted-worker-1", "namespace": ns},
        }
        await cluster.api.create(
            PODS, eviction, ns, subresource_of="evicted-worker-1", subresource="eviction"
        )

        # kube-apiserver v1.20's Eviction API only deletes the pod (tfgang names it PodDeleted);
        # newer releases first set DisruptionTarget with reason EvictionByEvictionAPI.
        reason = "EvictionByEvictionAPI" if runs_real_volcano(apiserver) else "PodDeleted"

        async def restarting() -> dict[str, Any] | None:
            found = await cluster.job("evicted")
            restart = condition(found, "Restarting")
            return found if restart and restart.get("reason") == reason else None

        job_now = await eventually(restarting, 60, what="evicted Restarting after the eviction")
        assert job_now["status"]["disruptions"] == 1
        message = str(condition(job_now, "Restarting")["message"])  # type: ignore[index]
        assert f"pod evicted-worker-1 was disrupted ({reason})" in message

        second = await _bound_pods(cluster, "evicted", 2, within=90)
        assert not set(second.values()) & set(first.values())
        await _run(cluster, sorted(second))
        await _state(cluster, "evicted", "Running")
        await cluster.set_pod("evicted-worker-0", "Succeeded", container_status("terminated", exit_code=0))
        done = await _state(cluster, "evicted", "Succeeded")
        assert done["status"]["disruptions"] == 1
        assert "restartCounts" not in done["status"]
