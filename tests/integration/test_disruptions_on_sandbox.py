"""D18 on both API servers, with the sandbox's real gang scheduler: a collective preempted by a
higher-priority gang restarts as a whole gang without touching ``backoffLimit: 0`` and succeeds; a
PS job whose worker is evicted replaces only that worker.

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
from .gang import gang_scheduler, node
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


async def test_a_preempted_collective_restarts_as_a_gang_without_touching_backoff_and_succeeds(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    suffix = uuid.uuid4().hex[:6]
    urgent_class, urgent_queue = f"urgent-{suffix}", f"urgent-{suffix}"
    collective = _with_cpu(simple_job("collective", ns, workers=2, run_policy={"backoffLimit": 0}), "400")
    urgent = _with_cpu(
        simple_job("urgent", ns, workers=1, run_policy={"schedulingPolicy": {"queue": urgent_queue}}), "300"
    )
    urgent["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = urgent_class
    config = controller_config(namespace=ns)
    async with (
        gang_scheduler(apiserver, [node(f"preempt-{suffix}")]) as admin,
        running_controller(controller_kubeconfig, config),
        kubelet_removing_terminated_pods(cluster),
    ):
        await admin.create(
            PRIORITY_CLASSES,
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": urgent_class}, "value": 1000},
        )  # fmt: skip
        await admin.create(
            QUEUES_V1BETA1,
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
             "metadata": {"name": urgent_queue}, "spec": {"weight": 1, "reclaimable": True}},
        )  # fmt: skip
        try:
            await cluster.create_job(collective)
            first = await _bound_pods(cluster, "collective", 2)
            await _run(cluster, sorted(first))
            await _state(cluster, "collective", "Running")

            # A higher-priority gang that does not fit beside it: the sandbox's gangpreempt evicts it.
            await cluster.create_job(urgent)

            async def restarting() -> dict[str, Any] | None:
                job = await cluster.job("collective")
                found = condition(job, "Restarting")
                return job if found and found.get("reason") == "PreemptionByScheduler" else None

            job = await eventually(restarting, 60, what="collective Restarting after its preemption")
            message = str(condition(job, "Restarting")["message"])  # type: ignore[index]
            assert message.startswith(
                f"TFJob {ns}/collective is restarting as a gang because pod collective-worker-"
            )
            assert "volcano: preempting to accommodate a higher priority pod" in message
            assert job["status"]["disruptions"] == 1
            assert "restartCounts" not in job["status"]

            # The preemptor runs while the collective's gang waits to be admitted again.
            (urgent_pod,) = await _bound_pods(cluster, "urgent", 1)
            await _run(cluster, [urgent_pod])
            await cluster.set_pod(urgent_pod, "Succeeded", container_status("terminated", exit_code=0))
            await _state(cluster, "urgent", "Succeeded")

            # Then every pod of the collective is new, the gang runs and succeeds.
            second = await _bound_pods(cluster, "collective", 2, within=90)
            assert sorted(second) == sorted(first)
            assert not set(second.values()) & set(first.values())
            await _run(cluster, sorted(second))
            await _state(cluster, "collective", "Running")
            await cluster.set_pod(
                "collective-worker-0", "Succeeded", container_status("terminated", exit_code=0)
            )
            done = await _state(cluster, "collective", "Succeeded")
            assert done["status"]["disruptions"] == 1
            assert "gangRestart" not in done["status"]
            assert "restartCounts" not in done["status"]
            assert condition(done, "Failed") is None
        finally:
            with contextlib.suppress(NotFound):
                await admin.delete(PRIORITY_CLASSES, urgent_class)


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

        async def restarting() -> dict[str, Any] | None:
            found = await cluster.job("evicted")
            restart = condition(found, "Restarting")
            return found if restart and restart.get("reason") == "PodDeleted" else None

        job_now = await eventually(restarting, 60, what="evicted Restarting after the eviction")
        assert job_now["status"]["disruptions"] == 1
        assert (
            "pod evicted-worker-1 was disrupted (PodDeleted)" in condition(job_now, "Restarting")["message"]
        )  # type: ignore[index]

        second = await _bound_pods(cluster, "evicted", 2, within=90)
        assert not set(second.values()) & set(first.values())
        await _run(cluster, sorted(second))
        await _state(cluster, "evicted", "Running")
        await cluster.set_pod("evicted-worker-0", "Succeeded", container_status("terminated", exit_code=0))
        done = await _state(cluster, "evicted", "Succeeded")
        assert done["status"]["disruptions"] == 1
        assert "restartCounts" not in done["status"]
