"""One scenario per design decision the controller carries out (D1-D7, D10, D11, D14, D15), and D16 at
admission through the registered webhook.

D3 (backoff failure deletes every pod and service) and D7 (PS keep running after success) are the
seed's worker- and PS-failure experiments, in ``test_seed_experiments_on_sandbox.py``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from controller.resources import TFJOBS
from kube.errors import ApiError
from kube.patches import PatchType
from kube.resources import PODS, PRIORITY_CLASSES

from .cluster import (
    Cluster,
    admit_and_wait_for_pods,
    condition,
    container_status,
    controller_writes,
    eventually,
    last_state,
    simple_job,
    wait_for_state,
)
from .operator import CONTROLLER_USER, controller_config, running_controller


async def _gone(cluster: Cluster, job: str) -> bool:
    return await cluster.podgroup(job) is None


async def test_d1_active_deadline_fails_a_quiet_job_on_time(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(simple_job("deadline", ns, run_policy={"activeDeadlineSeconds": 2}))
        (pod,) = await admit_and_wait_for_pods(cluster, "deadline", 1)
        await cluster.run_pods([pod])
        await wait_for_state(cluster, "deadline", "Running")
        # Nothing changes from here on: only the controller's own timer can fail the job.
        job = await wait_for_state(cluster, "deadline", "Failed", within=8)
        failed = condition(job, "Failed")
        assert failed is not None
        assert (
            failed["message"]
            == "Job deadline has failed because it was active longer than specified deadline"
        )
        await eventually(lambda: _gone(cluster, "deadline"), what="the PodGroup deleted")


async def test_d2_d5_recreations_count_toward_backoff_limit_and_restarting_clears(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    config = controller_config(namespace=ns)
    job = simple_job("exitcode", ns, restart_policy="ExitCode", run_policy={"backoffLimit": 2})
    async with running_controller(controller_kubeconfig, config), cluster.reaping_terminating_pods():
        await cluster.create_job(job)
        (name,) = await admit_and_wait_for_pods(cluster, "exitcode", 1)
        first_uid = (await cluster.pods("exitcode"))[name]["metadata"]["uid"]
        await cluster.run_pods([name])
        await wait_for_state(cluster, "exitcode", "Running")

        # 137 (SIGKILL) is retryable: the pod is recreated and the recreation is counted (D2).
        await cluster.set_pod(name, "Failed", container_status("terminated", exit_code=137))

        async def recreated() -> str | None:
            pod = (await cluster.pods("exitcode")).get(name)
            uid = pod["metadata"]["uid"] if pod else None
            return uid if uid and uid != first_uid else None

        second_uid = await eventually(recreated, what="the pod recreated")
        restarting = await wait_for_state(cluster, "exitcode", "Restarting")
        assert restarting["status"]["restartCounts"] == {"Worker": 1}

        # The new pod runs: Restarting gives way to Running (D5).
        await cluster.run_pods([name])
        await wait_for_state(cluster, "exitcode", "Running")

        # A second retryable failure makes two recreations: backoffLimit 2 is reached.
        await cluster.set_pod(name, "Failed", container_status("terminated", exit_code=137))
        failed = await wait_for_state(cluster, "exitcode", "Failed")
        assert condition(failed, "Failed")["message"] == (  # type: ignore[index]
            "Job exitcode has failed because it has reached the specified backoff limit"
        )
        assert failed["status"]["restartCounts"] == {"Worker": 2}
        assert second_uid != first_uid


async def test_d5_a_permanent_failure_fails_the_job_even_while_it_is_restarting(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    job = simple_job("sticky", ns, restart_policy="ExitCode")
    async with (
        running_controller(controller_kubeconfig, controller_config(namespace=ns)),
        cluster.reaping_terminating_pods(),
    ):
        await cluster.create_job(job)
        (name,) = await admit_and_wait_for_pods(cluster, "sticky", 1)
        first_uid = (await cluster.pods("sticky"))[name]["metadata"]["uid"]
        await cluster.set_pod(name, "Failed", container_status("terminated", exit_code=137))
        await wait_for_state(cluster, "sticky", "Restarting")

        async def recreated() -> bool:
            pod = (await cluster.pods("sticky")).get(name)
            return bool(pod and pod["metadata"]["uid"] != first_uid)

        await eventually(recreated, what="the pod recreated")
        # Still Restarting (the new pod never ran) when it exits 1: permanent under ExitCode (D9).
        await cluster.set_pod(name, "Failed", container_status("terminated", exit_code=1))
        failed = await wait_for_state(cluster, "sticky", "Failed")
        assert condition(failed, "Failed")["message"] == (  # type: ignore[index]
            'job "sticky" is failing because "Worker" replica(s) failed.'
        )


async def test_d4_a_pod_deleted_by_someone_else_is_recreated_not_failed(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    # Per replica: a job without PS would restart as a whole gang instead (D18).
    job = simple_job("lost", ns, workers=2)
    job["metadata"]["annotations"] = {"tfgang.io/gang-restart": "false"}
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(job)
        names = await admit_and_wait_for_pods(cluster, "lost", 2)
        await cluster.run_pods(names)
        await wait_for_state(cluster, "lost", "Running")
        old_uid = (await cluster.pods("lost"))["lost-worker-1"]["metadata"]["uid"]

        async with cluster.reaping_terminating_pods():
            await cluster.api.delete(PODS, "lost-worker-1", ns)  # kubectl delete pod

            async def recreated() -> bool:
                pod = (await cluster.pods("lost")).get("lost-worker-1")
                return bool(pod and pod["metadata"]["uid"] != old_uid)

            await eventually(recreated, what="lost-worker-1 recreated")
        job = await cluster.job("lost")
        assert condition(job, "Failed") is None
        assert last_state(job) == "Running"


async def test_d6_the_first_terminal_condition_wins(cluster: Cluster, controller_kubeconfig: str) -> None:
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(simple_job("terminal", ns, workers=2))
        names = await admit_and_wait_for_pods(cluster, "terminal", 2)
        await cluster.run_pods(names)
        await wait_for_state(cluster, "terminal", "Running")
        await cluster.finish_pods(["terminal-worker-0"])
        await wait_for_state(cluster, "terminal", "Succeeded")
        await cluster.finish_pods(["terminal-worker-1"], exit_code=1)
        await asyncio.sleep(0.3)
        job = await cluster.job("terminal")
        assert last_state(job) == "Succeeded"
        assert condition(job, "Failed") is None


async def test_d10_repeated_events_are_aggregated_not_stormed(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)) as controller:
        await cluster.create_job(simple_job("noisy", ns, restart_policy="OnFailure"))
        (name,) = await admit_and_wait_for_pods(cluster, "noisy", 1)
        # A crash-looping container: every status change is a pass that sees the same problem.
        for restarts in range(1, 8):
            await cluster.set_pod(
                name,
                "Running",
                container_status(
                    "waiting",
                    reason="CrashLoopBackOff",
                    restart_count=restarts,
                    message="back-off restarting failed container",
                ),
            )
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        await controller.events.flush()
        events = await cluster.events("noisy")
        keys = Counter((e["reason"], e["message"]) for e in events)
        assert keys, "the controller recorded events about the job"
        assert max(keys.values()) == 1, f"one Event object per reason and message: {keys}"
        assert any(e.get("count", 1) > 1 for e in events), f"repeats are counted on the one Event: {events}"


async def test_d14_a_gang_not_admitted_in_time_fails_the_job_and_deletes_the_podgroup(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    # Long enough that a loaded machine still shows the PodGroup before the timeout removes it.
    run_policy = {"schedulingPolicy": {"scheduleTimeoutSeconds": 3}}
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(simple_job("stuck", ns, run_policy=run_policy))
        await eventually(lambda: cluster.podgroup("stuck"), what="the PodGroup")
        await cluster.set_podgroup_phase("stuck", "Pending")  # Volcano cannot admit it
        job = await wait_for_state(cluster, "stuck", "Failed", within=15)
        failed = condition(job, "Failed")
        assert failed is not None and failed["reason"] == "TFJobScheduleTimeout"
        await eventually(lambda: _gone(cluster, "stuck"), what="the PodGroup deleted")
        assert await cluster.pods("stuck") == {}


async def test_d15_the_podgroup_spec_is_patched_only_when_it_changes(
    cluster: Cluster, controller_kubeconfig: str, apiserver: Any
) -> None:
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(simple_job("gang", ns, workers=2))
        names = await admit_and_wait_for_pods(cluster, "gang", 2)
        # Many passes: pods change, Volcano writes the PodGroup status over and over.
        for running in range(1, 3):
            await cluster.set_podgroup_phase("gang", "Running", running=running)
        await cluster.run_pods(names)
        await wait_for_state(cluster, "gang", "Running")
        await asyncio.sleep(0.2)
        podgroup_writes = [
            w for w in controller_writes(apiserver, CONTROLLER_USER, ns) if w.resource == "podgroups"
        ]
        assert [(w.verb, w.subresource) for w in podgroup_writes] == [("create", "")]

        # A spec change that alters the gang (minAvailable) is one merge patch, status untouched.
        await cluster.api.patch(
            TFJOBS,
            "gang",
            {"spec": {"runPolicy": {"schedulingPolicy": {"minAvailable": 1}}}},
            ns,
            patch_type=PatchType.MERGE,
        )

        async def min_member_is_one() -> bool:
            podgroup = await cluster.podgroup("gang")
            return bool(podgroup and podgroup["spec"]["minMember"] == 1)

        await eventually(min_member_is_one, what="minMember patched to 1")
        podgroup = await cluster.podgroup("gang")
        assert podgroup is not None and podgroup["status"]["phase"] == "Running"
        await asyncio.sleep(0.2)
        podgroup_writes = [
            w for w in controller_writes(apiserver, CONTROLLER_USER, ns) if w.resource == "podgroups"
        ]
        assert [w.verb for w in podgroup_writes] == ["create", "patch"]


async def test_d16_an_invalid_tfjob_is_rejected_at_admission_and_never_reaches_the_controller(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    invalid = simple_job("bad", ns, restart_policy="Sometimes")  # not a known restartPolicy
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        with pytest.raises(ApiError) as rejected:
            await cluster.create_job(invalid)
        assert rejected.value.status in (400, 403, 422)
        assert "restartPolicy" in rejected.value.message
        assert await cluster.podgroup("bad") is None


async def test_d11_podgroup_min_resources_follow_the_priority_classes_really_looked_up(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    high, low = f"{ns}-high", f"{ns}-low"
    for name, value in ((high, 1000), (low, 10)):
        await cluster.api.create(
            PRIORITY_CLASSES,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
    job = simple_job("ranked", ns, workers=1, ps=1, run_policy={"schedulingPolicy": {"minAvailable": 1}})
    specs = job["spec"]["tfReplicaSpecs"]
    specs["Worker"]["template"]["spec"]["priorityClassName"] = high
    specs["Worker"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}}
    specs["PS"]["template"]["spec"]["priorityClassName"] = low
    specs["PS"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(job)
        podgroup = await eventually(lambda: cluster.podgroup("ranked"), what="the PodGroup")
        # The fixed order alone would take the PS (1 CPU); its lower priority puts the Worker first.
        assert podgroup["spec"]["minMember"] == 1
        assert podgroup["spec"]["minResources"] == {"cpu": "2"}
