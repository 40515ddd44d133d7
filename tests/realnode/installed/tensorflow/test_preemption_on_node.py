"""The TensorFlow collective preempted by the real Volcano for a higher-priority TFJob of its queue
(D18 on the node): Volcano evicts a worker, tfgang restarts the whole gang, whose new pods wait
while the preemptor runs and start once room returns; training resumes from its checkpoint and the
job ends Succeeded, one disruption counted, never Failed.

The node's free CPU is measured and both jobs sized from it: the collective's two workers take
70 %, the preemptor 55 %, so the preemptor fits on the node alone but not beside the collective.
Volcano's default actions start with ``enqueue``, whose ``proportion`` and ``overcommit`` checks
never admit a job that does not fit in the cluster's free room: on one node nothing would ever
preempt. So the scheduler runs ``allocate, preempt, backfill`` here (``allocate`` then admits
every pending job itself), with the default plugins, and gets its default configuration back at
the end.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from realcluster.onenode import OneNode
from realcluster.volcano import volcano_scheduler_conf
from tests.realnode.installed.podview import small_job
from tests.tensorflow.onnode import (
    NAMESPACE,
    STATED_ACCURACY,
    Cluster,
    condition,
    example_job,
    wait_epoch,
    wait_finished,
    wait_for,
    worker_pods,
)
from tests.tensorflow.trainlog import epochs_run_twice, runs
from tfjob.constants import LABEL_JOB_NAME

pytestmark = [pytest.mark.tensorflow, pytest.mark.timeout(900)]

EPOCHS = 10
FINISH_TIMEOUT = 420.0
PREEMPT_ACTIONS = "allocate, preempt, backfill"
"""``preempt`` evicts lower-priority jobs of the preemptor's own queue for a job ``allocate``
could not place; without ``enqueue``, ``allocate`` admits pending jobs itself."""
WORKERS_SHARE = 0.35  # of the node's free CPU, each of the collective's two workers
PREEMPTOR_SHARE = 0.55  # alone it fits; beside the collective (70 %) it does not
PREEMPTOR_SECONDS = 20
PREEMPTED = "volcano: preempting to accommodate a higher priority pod"


def _millicpu(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else round(float(quantity) * 1000)


def _free_millicpu(cluster: Cluster) -> int:
    """The node's allocatable CPU less what the pods bound to it request, once no pod is going
    away: none terminating, none of a TFJob already deleted (the garbage collector has yet to
    delete it). Either holds room now that it gives back before the preemptor comes."""

    def settled() -> list[dict[str, Any]] | None:
        pods: list[dict[str, Any]] = json.loads(cluster.kubectl("get", "pods", "-A", "-o", "json"))["items"]
        jobs = json.loads(cluster.kubectl("get", "tfjobs", "-A", "-o", "json"))["items"]
        present = {(job["metadata"]["namespace"], job["metadata"]["name"]) for job in jobs}
        for pod in pods:
            meta = pod["metadata"]
            owner = (meta.get("labels") or {}).get(LABEL_JOB_NAME)
            if meta.get("deletionTimestamp") or (owner and (meta["namespace"], owner) not in present):
                return None
        return pods

    pods: list[dict[str, Any]] = wait_for("no pod on the node going away", settled, 180)
    (node,) = json.loads(cluster.kubectl("get", "nodes", "-o", "json"))["items"]
    requested = sum(
        _millicpu(container.get("resources", {}).get("requests", {}).get("cpu", "0"))
        for pod in pods
        if pod["spec"].get("nodeName") and pod["status"].get("phase") not in ("Succeeded", "Failed")
        for container in pod["spec"]["containers"]
    )
    return _millicpu(node["status"]["allocatable"]["cpu"]) - requested


@contextlib.contextmanager
def _volcano_preempting(one_node: OneNode) -> Iterator[None]:
    """Volcano's scheduler with ``PREEMPT_ACTIONS`` until the block ends (it reloads its
    configuration file on every change), then the configuration the node started with."""
    original = one_node.volcano.scheduler_conf or volcano_scheduler_conf(one_node.node.components)
    conf = yaml.safe_load(original)
    conf["actions"] = PREEMPT_ACTIONS
    one_node.volcano.set_scheduler_conf(yaml.safe_dump(conf, sort_keys=False))
    try:
        yield
    finally:
        one_node.volcano.set_scheduler_conf(original)


@contextlib.contextmanager
def _priority_class(cluster: Cluster, value: int) -> Iterator[str]:
    name = f"tf-urgent-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    cluster.kubectl("create", "-f", "-", stdin=json.dumps(body))
    try:
        yield name
    finally:
        cluster.kubectl("delete", "priorityclass", name, "--ignore-not-found")


def _preemptor(name: str, priority_class: str, cpu_millis: int) -> dict[str, Any]:
    """One busybox worker of ``priority_class`` that asks for ``cpu_millis`` and sleeps; its pod
    stays once done (``cleanPodPolicy: None``) so that its end can be read."""
    run_policy = {"cleanPodPolicy": "None", "schedulingPolicy": {"priorityClass": priority_class}}
    job = small_job(name, NAMESPACE, f"sleep {PREEMPTOR_SECONDS}", run_policy=run_policy)
    pod = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
    pod["priorityClassName"] = priority_class  # the PodGroup's ranks the job, the pod's the task
    pod["containers"][0]["resources"] = {
        "requests": {"cpu": f"{cpu_millis}m", "memory": "32Mi"},
        "limits": {"memory": "32Mi"},
    }
    return job


def _with_cpu_request(job: dict[str, Any], cpu_millis: int) -> dict[str, Any]:
    for spec in job["spec"]["tfReplicaSpecs"].values():
        spec["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = f"{cpu_millis}m"
    return job


def test_a_collective_preempted_by_volcano_restarts_as_a_gang_once_room_returns_and_resumes(
    one_node: OneNode, example_cluster: Cluster, checkpoints: Path, tmp_path: Path
) -> None:
    name, urgent, workers, interrupt_after = "tf-preempted", "tf-urgent", 2, 2
    free = _free_millicpu(example_cluster)
    worker_cpu, urgent_cpu = int(free * WORKERS_SHARE), int(free * PREEMPTOR_SHARE)
    assert workers * worker_cpu + urgent_cpu > free >= urgent_cpu, (free, worker_cpu, urgent_cpu)
    # Slow steps (0.15 s, about 3 s an epoch) leave time to preempt an epoch in the middle.
    job = example_job("collective.yaml", name, checkpoints, env={"STEP_DELAY": "0.15"}, workers=workers)
    chief, other = worker_pods(name, workers)
    with _volcano_preempting(one_node), _priority_class(example_cluster, 1000) as priority_class:
        example_cluster.submit(_with_cpu_request(job, worker_cpu))
        try:
            wait_epoch(example_cluster, chief, 1, FINISH_TIMEOUT)
            old_uids = {pod: example_cluster.pod(pod)["metadata"]["uid"] for pod in (chief, other)}  # type: ignore[index]
            follower = example_cluster.follow_log(chief, tmp_path / "chief-before.log")
            wait_epoch(example_cluster, chief, interrupt_after, FINISH_TIMEOUT)
            example_cluster.submit(_preemptor(urgent, priority_class, urgent_cpu))

            def restarting_for_preemption() -> dict[str, Any] | None:
                found = condition(example_cluster.job(name), "Restarting")
                return found if found and found.get("reason") == "PreemptionByScheduler" else None

            # Seen while the gang waits for the preemptor to end (Running drops it then).
            restarting = wait_for(f"{name} Restarting for Volcano", restarting_for_preemption, 120)
            assert PREEMPTED in restarting["message"], restarting
            follower.wait(timeout=120)  # the old chief's container ends: the gang goes

            done_urgent = wait_finished(example_cluster, urgent, FINISH_TIMEOUT)
            assert condition(done_urgent, "Succeeded"), done_urgent["status"]
            job_now = wait_finished(example_cluster, name, FINISH_TIMEOUT)
            assert condition(job_now, "Succeeded"), job_now["status"]
            assert not condition(job_now, "Failed"), job_now["status"]
            assert job_now["status"].get("disruptions") == 1, job_now["status"]
            assert "gangRestart" not in job_now["status"]

            # The whole gang was new, and started only once the preemptor had ended.
            (urgent_pod,) = worker_pods(urgent, 1)
            urgent_status = example_cluster.pod(urgent_pod)["status"]  # type: ignore[index]
            urgent_ended = urgent_status["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
            for pod in (chief, other):
                new = example_cluster.pod(pod)
                assert new is not None and new["metadata"]["uid"] != old_uids[pod], pod
                # RFC 3339 times in UTC, to the second: ordered as strings.
                started = new["status"]["startTime"]
                assert started >= urgent_ended, (pod, started, urgent_ended)

            (before,) = runs((tmp_path / "chief-before.log").read_text())
            assert not before.finished and (before.last_epoch or 0) >= interrupt_after
            for pod in (chief, other):
                (after,) = runs(example_cluster.log(pod))
                # Resumed from the last epoch saved, not from the start; at most the preempted
                # epoch runs again, and every epoch up to the last one is trained.
                assert after.resumed and after.first_epoch is not None, after
                assert after.first_epoch > interrupt_after, after
                epochs = (before.last_epoch, after.first_epoch)
                assert epochs_run_twice(before, after) == [], epochs
                assert after.first_epoch <= (before.last_epoch or 0) + 1, epochs
                assert [epoch.number for epoch in after.epochs] == list(range(after.first_epoch, EPOCHS + 1))
                assert after.test_accuracy is not None and after.test_accuracy >= STATED_ACCURACY, after
        finally:
            example_cluster.delete_job(urgent)
            example_cluster.delete_job(name)
