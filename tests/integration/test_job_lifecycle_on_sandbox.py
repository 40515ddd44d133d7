"""Suspend and resume, cleanPodPolicy, and the TTL after a job finishes, carried out for real."""

from __future__ import annotations

import asyncio

from controller.resources import TFJOBS
from kube.errors import NotFound
from kube.patches import PatchType

from .cluster import Cluster, admit_and_wait_for_pods, condition, eventually, simple_job, wait_for_state
from .operator import controller_config, running_controller


async def test_suspend_removes_every_child_and_resume_brings_them_back(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(simple_job("nap", ns, workers=2))
        names = await admit_and_wait_for_pods(cluster, "nap", 2)
        await cluster.run_pods(names)
        await wait_for_state(cluster, "nap", "Running")

        async with cluster.reaping_terminating_pods():
            await cluster.api.patch(
                TFJOBS, "nap", {"spec": {"runPolicy": {"suspend": True}}}, ns, patch_type=PatchType.MERGE
            )
            suspended = await wait_for_state(cluster, "nap", "Suspended")
            assert condition(suspended, "Running")["status"] == "False"  # type: ignore[index]

            async def all_gone() -> bool:
                return (
                    not await cluster.pods("nap")
                    and not await cluster.services("nap")
                    and await cluster.podgroup("nap") is None
                )

            await eventually(all_gone, what="pods, services and PodGroup deleted")

        await cluster.api.patch(
            TFJOBS, "nap", {"spec": {"runPolicy": {"suspend": False}}}, ns, patch_type=PatchType.MERGE
        )
        assert await admit_and_wait_for_pods(cluster, "nap", 2) == names
        resumed = await cluster.job("nap")
        assert condition(resumed, "Suspended")["status"] == "False"  # type: ignore[index]
        assert condition(resumed, "Suspended")["reason"] == "TFJobResumed"  # type: ignore[index]


async def test_clean_pod_policy_all_removes_the_pods_of_a_finished_job(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    job = simple_job("tidy", ns, workers=1, ps=1, run_policy={"cleanPodPolicy": "All"})
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(job)
        names = await admit_and_wait_for_pods(cluster, "tidy", 2)
        await cluster.run_pods(names)
        await cluster.finish_pods(["tidy-worker-0"])
        await wait_for_state(cluster, "tidy", "Succeeded")

        async def pods_going() -> bool:
            pods = await cluster.pods("tidy")
            return all(pod["metadata"].get("deletionTimestamp") for pod in pods.values())

        await eventually(pods_going, what="every pod of the finished job deleted, the PS included")


async def test_ttl_after_finished_deletes_the_job(cluster: Cluster, controller_kubeconfig: str) -> None:
    ns = cluster.namespace
    # Long enough that the Succeeded state is seen before the TTL deletes the job, even on a busy
    # machine; the timer itself is what is tested.
    job = simple_job("brief", ns, run_policy={"ttlSecondsAfterFinished": 4})
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)) as controller:
        await cluster.create_job(job)
        (name,) = await admit_and_wait_for_pods(cluster, "brief", 1)
        await cluster.run_pods([name])
        await cluster.finish_pods([name])
        await wait_for_state(cluster, "brief", "Succeeded")

        async def deleted() -> bool:
            try:
                await cluster.job("brief")
            except NotFound:
                return True
            return False

        await eventually(deleted, within=15, what="the job deleted by its TTL")
        await asyncio.sleep(0.1)
        assert controller.metrics.job_count("jobs_deleted", ns) == 1
