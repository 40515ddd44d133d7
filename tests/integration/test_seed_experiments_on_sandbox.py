"""The seed transcript's three experiments, driven by writing its pod states through the API.

The controller runs in-process, the webhook as a real process. The test plays Volcano (PodGroup
phase) and the kubelet (pod status), in the order the transcript shows, and checks the states the
transcript ends in, plus the write budget of a job whose pods change state together.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from .cluster import (
    Cluster,
    admit_and_wait_for_pods,
    condition,
    container_status,
    controller_writes,
    eventually,
    last_state,
    load_seed,
    status_writes,
    wait_for_state,
)
from .operator import CONTROLLER_USER, controller_config, running_controller

PODS = ["tftest-ps-0", "tftest-worker-0", "tftest-worker-1", "tftest-worker-2"]


def seed_tf_config(namespace: str, task_type: str, index: int) -> str:
    """The transcript's TF_CONFIG, byte for byte, for a job in ``namespace``."""
    return (
        (
            '{"cluster":{"ps":["tftest-ps-0.NS.svc:2222"],"worker":["tftest-worker-0.NS.svc:2222",'
            '"tftest-worker-1.NS.svc:2222","tftest-worker-2.NS.svc:2222"]},"task":{"type":"TYPE","index":INDEX},'
            '"environment":"cloud"}'
        )
        .replace("NS", namespace)
        .replace("TYPE", task_type)
        .replace("INDEX", str(index))
    )


def env_of(pod: dict[str, Any], name: str) -> str | None:
    for container in pod["spec"]["containers"]:
        if container["name"] == "tensorflow":
            for entry in container.get("env") or ():
                if entry["name"] == name:
                    return str(entry.get("value"))
    return None


class StateRecorder:
    """The distinct values of the job's STATE column, as ``kubectl get tfjob -w`` would show them."""

    def __init__(self, cluster: Cluster, name: str) -> None:
        self.cluster, self.name, self.states = cluster, name, [""]

    async def sample(self) -> str:
        state = last_state(await self.cluster.job(self.name))
        if state != self.states[-1]:
            self.states.append(state)
        return state


async def _start_seed_and_run_its_pods(cluster: Cluster, experiment: str) -> StateRecorder:
    """The seed's TFJob created, admitted by "Volcano" and its four pods Running, as in the
    transcript's first seconds; returns the recorder of the job's distinct states so far."""
    await cluster.create_job(load_seed(experiment, "tftest", cluster.namespace))
    states = StateRecorder(cluster, "tftest")
    await eventually(lambda: _is(states.sample(), "Created"), what="Created")
    await admit_and_wait_for_pods(cluster, "tftest", 4)
    await cluster.set_podgroup_phase("tftest", "Running", running=4)
    await cluster.run_pods(PODS)
    await wait_for_state(cluster, "tftest", "Running")
    await states.sample()
    return states


async def test_seed_normal_run_succeeds_keeps_pods_and_stays_within_the_write_budget(
    cluster: Cluster, controller_kubeconfig: str, apiserver: Any
) -> None:
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)) as controller:
        await cluster.create_job(load_seed("normal", "tftest", ns))
        states = StateRecorder(cluster, "tftest")
        podgroup = await eventually(lambda: cluster.podgroup("tftest"), what="the PodGroup")
        assert podgroup["spec"]["minMember"] == 4
        assert podgroup["spec"]["queue"] == "default"
        await eventually(states.sample, what="Created")
        assert states.states == ["", "Created"]
        assert await cluster.pods("tftest") == {}, "pods must wait until Volcano admits the PodGroup"

        names = await admit_and_wait_for_pods(cluster, "tftest", 4)
        assert names == PODS
        services = await eventually(lambda: cluster.services("tftest"), what="services")
        await eventually(lambda: _count(cluster.services("tftest"), 4), what="4 services")
        assert all(svc["spec"]["clusterIP"] == "None" for svc in services.values())
        pods = await cluster.pods("tftest")
        assert env_of(pods["tftest-ps-0"], "TF_CONFIG") == seed_tf_config(ns, "ps", 0)
        assert env_of(pods["tftest-worker-0"], "TF_CONFIG") == seed_tf_config(ns, "worker", 0)
        assert pods["tftest-ps-0"]["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "tftest"

        await cluster.set_podgroup_phase("tftest", "Running", running=4)
        async with controller.paused():
            await cluster.run_pods(PODS)
            await asyncio.sleep(0.2)  # the watch brings all four changes in before the next pass
        await wait_for_state(cluster, "tftest", "Running")
        await states.sample()

        async with controller.paused():
            await cluster.finish_pods(PODS)
            await asyncio.sleep(0.2)
        job = await wait_for_state(cluster, "tftest", "Succeeded")
        await states.sample()
        assert states.states == ["", "Created", "Running", "Succeeded"]
        assert [c["type"] for c in job["status"]["conditions"]] == ["Created", "Running", "Succeeded"]
        assert condition(job, "Running")["status"] == "False"
        await eventually(lambda: _none(cluster.podgroup("tftest")), what="the PodGroup deleted")
        assert sorted(await cluster.pods("tftest")) == PODS, "cleanPodPolicy None keeps the pods"
        await asyncio.sleep(0.3)  # any late write would show up now

    writes = controller_writes(apiserver, CONTROLLER_USER, ns)
    summary = json.dumps([(w.verb, w.resource, w.subresource, w.name) for w in writes])
    assert len(writes) <= 2 * 4 + 6, summary
    assert len(status_writes(writes)) <= 4, summary
    assert sum(1 for w in writes if w.resource == "podgroups") == 2, summary  # create, delete (D15)


async def test_seed_worker_failure_fails_by_backoff_limit_and_removes_every_pod(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        states = await _start_seed_and_run_its_pods(cluster, "worker-failure")

        # The transcript's pod lines, in order (worker-0 exits 1 under OnFailure: restarted in place).
        steps: list[tuple[str, str, dict[str, Any]]] = [
            ("tftest-worker-0", "Running", container_status("terminated", exit_code=1)),
            ("tftest-worker-0", "Running", container_status("running", restart_count=1)),
            ("tftest-worker-0", "Running", container_status("terminated", exit_code=1, restart_count=1)),
            ("tftest-ps-0", "Running", container_status("terminated", exit_code=0)),
            ("tftest-worker-2", "Succeeded", container_status("terminated", exit_code=0)),
            ("tftest-worker-1", "Succeeded", container_status("terminated", exit_code=0)),
            ("tftest-ps-0", "Running", container_status("running", restart_count=1)),
            (
                "tftest-worker-0",
                "Running",
                container_status("waiting", reason="CrashLoopBackOff", restart_count=1),
            ),
        ]
        for pod, phase, container in steps:
            await cluster.set_pod(pod, phase, container)
            await asyncio.sleep(0.05)
            assert await states.sample() == "Running"
        # worker-0 restarts a second time: 2 + the PS's 1 reach backoffLimit 3.
        await cluster.set_pod("tftest-worker-0", "Running", container_status("running", restart_count=2))
        job = await wait_for_state(cluster, "tftest", "Failed")
        await states.sample()

        assert states.states == ["", "Created", "Running", "Failed"]
        failed = condition(job, "Failed")
        assert failed is not None
        assert failed["message"] == "Job tftest has failed because it has reached the specified backoff limit"

        async def all_pods_going() -> bool:  # D3: every pod and service is deleted
            pods = await cluster.pods("tftest")
            return all(p["metadata"].get("deletionTimestamp") for p in pods.values())

        await eventually(all_pods_going, what="every pod deleted")
        await eventually(lambda: _count(cluster.services("tftest"), 0), what="every service deleted")
        await eventually(lambda: _none(cluster.podgroup("tftest")), what="the PodGroup deleted")


async def test_seed_ps_failure_still_succeeds_and_the_ps_keeps_running(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        states = await _start_seed_and_run_its_pods(cluster, "ps-failure")
        # The PS (restartPolicy Always) exits 1 and is restarted in place, once before the workers end.
        await cluster.set_pod("tftest-ps-0", "Running", container_status("terminated", exit_code=1))
        await cluster.set_pod("tftest-ps-0", "Running", container_status("running", restart_count=1))
        await asyncio.sleep(0.1)
        assert await states.sample() == "Running"
        await cluster.finish_pods(["tftest-worker-0", "tftest-worker-1", "tftest-worker-2"])
        job = await wait_for_state(cluster, "tftest", "Succeeded")
        await states.sample()
        # It keeps crashing afterwards; the job stays Succeeded and the PS pod stays (D7).
        await cluster.set_pod(
            "tftest-ps-0", "Running", container_status("terminated", exit_code=1, restart_count=1)
        )
        await cluster.set_pod("tftest-ps-0", "Running", container_status("running", restart_count=2))
        await asyncio.sleep(0.2)
        assert await states.sample() == "Succeeded"
        assert states.states == ["", "Created", "Running", "Succeeded"]
        assert job["status"]["replicaStatuses"]["Worker"].get("succeeded") == 3
        pods = await cluster.pods("tftest")
        assert "tftest-ps-0" in pods and not pods["tftest-ps-0"]["metadata"].get("deletionTimestamp")
        await eventually(lambda: _none(cluster.podgroup("tftest")), what="the PodGroup deleted")


async def _count(coro: Any, expected: int) -> bool:
    return len(await coro) == expected


async def _is(coro: Any, expected: Any) -> bool:
    return bool((await coro) == expected)


async def _none(coro: Any) -> bool:
    return (await coro) is None


async def test_never_more_than_one_status_write_per_observed_change(
    cluster: Cluster, controller_kubeconfig: str, apiserver: Any
) -> None:
    """Pods that change one at a time: each change is seen by one pass and costs at most one write."""
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)) as controller:
        await cluster.create_job(load_seed("normal", "tftest", ns))
        await admit_and_wait_for_pods(cluster, "tftest", 4)
        await asyncio.sleep(0.2)
        changes = [
            *((name, "Running", container_status("running")) for name in PODS),
            *((name, "Succeeded", container_status("terminated")) for name in reversed(PODS)),
        ]
        for name, phase, container in changes:
            before = len(status_writes(controller_writes(apiserver, CONTROLLER_USER, ns)))
            async with controller.paused():
                await cluster.set_pod(name, phase, container)
                await asyncio.sleep(0.1)  # the change reaches the cache; the pass waits
            await asyncio.sleep(0.2)  # the pass (and any writes it triggers) run
            after = len(status_writes(controller_writes(apiserver, CONTROLLER_USER, ns)))
            assert after - before <= 1, f"{after - before} status writes after {name} -> {phase}"
        await wait_for_state(cluster, "tftest", "Succeeded")
