"""Upstream's behaviour: finished jobs, TTL, terminal finality, suspend and resume."""

from __future__ import annotations

import pytest

from tfjob.planner import CreatePod, DeleteJob, DeletePod, DeleteService

from .builders import (
    NO_GANG,
    VOLCANO,
    at,
    condition,
    conditions_of,
    make_job,
    pod,
    podgroup,
    replica,
    run,
    running_status,
    services,
)
from .cluster import Cluster


def _finished_status(final: str = "Succeeded") -> dict[str, object]:
    status = running_status(["Created", final])
    status["completionTime"] = "2026-11-29T10:41:00Z"
    return status


@pytest.mark.parametrize(
    ("policy", "phase", "deleted"),
    [
        ("Running", "Succeeded", 0),
        ("None", "Succeeded", 0),
        ("All", "Succeeded", 6),
        ("Running", "Running", 6),
        ("All", "Running", 6),
        ("None", "Running", 0),
    ],
)
def test_s43_clean_pod_policy_matrix_on_a_succeeded_job(policy: str, phase: str, deleted: int) -> None:
    job = make_job(
        {"Worker": replica(4), "PS": replica(2)},
        run_policy={"cleanPodPolicy": policy},
        status=_finished_status(),
    )
    exit_code = 0 if phase == "Succeeded" else None
    pods = [pod(job, "Worker", i, phase, exit_code=exit_code) for i in range(4)]
    pods += [pod(job, "PS", i, phase, exit_code=exit_code) for i in range(2)]
    result = run(job, pods, svcs=services(job))
    assert len([a for a in result.actions if isinstance(a, DeletePod)]) == deleted
    assert len([a for a in result.actions if isinstance(a, DeleteService)]) == deleted
    assert len(result.actions) == 2 * deleted


def test_s44_ttl_requeues_then_deletes_the_job() -> None:
    job = make_job({"Worker": replica(1)}, run_policy={"ttlSecondsAfterFinished": 3})
    cluster = Cluster(job, NO_GANG)
    cluster.reconcile(at(0))
    cluster.set_pod("tj-worker-0", "Succeeded", exit_code=0)
    finishing = cluster.reconcile(at(10))
    assert cluster.conditions[-1] == ("Succeeded", "True")
    assert finishing.requeue_after == 3
    assert cluster.reconcile(at(11.5)).requeue_after == 1.5
    expired = cluster.reconcile(at(13))
    assert expired.actions == (DeleteJob("tj", "uid-tj"),)
    assert expired.counters == ("jobs_deleted",)
    event = expired.actions[0].success_event()
    assert event is not None and (event.reason, event.message) == ("SuccessfulDeleteJob", "Deleted job: tj")
    assert cluster.job is None


@pytest.mark.parametrize("change", ["suspend", "scale"])
def test_s45_a_failed_job_ignores_spec_changes(change: str) -> None:
    status = _finished_status("Failed")
    job = make_job({"Worker": replica(2, "Never")}, status=status)
    if change == "suspend":
        job["spec"]["runPolicy"] = {"suspend": True}
    else:
        job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 5  # type: ignore[index]
    pods = [pod(job, "Worker", 0, "Running"), pod(job, "Worker", 1, "Failed", exit_code=1)]
    result = run(job, pods, svcs=services(job))
    assert result.actions == ()
    assert result.status == status


def test_s46_created_suspended_makes_nothing() -> None:
    job = make_job({"Worker": replica(2)}, run_policy={"suspend": True})
    result = run(job, settings=VOLCANO)
    assert result.actions == ()
    assert conditions_of(result) == [("Created", "True"), ("Suspended", "True")]
    suspended = condition(result, "Suspended")
    assert (suspended["reason"], suspended["message"]) == ("TFJobSuspended", "TFJob tj is suspended.")
    assert condition(result, "Created")["message"] == "TFJob tj is created."
    assert "startTime" not in result.status


def test_s47_suspend_while_running_deletes_everything() -> None:
    status = running_status(["Created", "Running"])
    status["replicaStatuses"] = {"Worker": {"active": 2}}
    job = make_job({"Worker": replica(2)}, run_policy={"suspend": True}, status=status)
    pods = [pod(job, "Worker", i, "Running") for i in range(2)]
    result = run(job, pods, svcs=services(job), group=podgroup(job, "Running"), settings=VOLCANO)
    assert [type(a).__name__ for a in result.actions] == [
        "DeletePod",
        "DeletePod",
        "DeleteService",
        "DeleteService",
        "DeletePodGroup",
    ]
    assert conditions_of(result) == [("Created", "True"), ("Running", "False"), ("Suspended", "True")]
    running = condition(result, "Running")
    assert (running["reason"], running["message"]) == ("TFJobSuspended", "TFJob tj is suspended.")
    assert result.status["replicaStatuses"] == {"Worker": {}}
    assert ("Normal", "TFJobSuspended") in [(e.type, e.reason) for e in result.events]
    again = run(make_job({"Worker": replica(2)}, run_policy={"suspend": True}, status=result.status))
    assert again.status == result.status and again.events == ()


def test_s48_resume_recreates_pods_and_restarts_the_clock() -> None:
    job = make_job({"Worker": replica(1)}, run_policy={"suspend": True})
    cluster = Cluster(job, NO_GANG)
    cluster.reconcile(at(0))
    cluster.reconcile(at(5))
    assert cluster.job is not None
    cluster.job["spec"]["runPolicy"]["suspend"] = False
    resumed = cluster.reconcile(at(100))
    assert [type(a) for a in resumed.actions if isinstance(a, CreatePod)] == [CreatePod]
    assert cluster.job["status"]["startTime"] == "2026-11-29T10:42:40Z"
    resumed_condition = cluster.job["status"]["conditions"][-1]
    assert (resumed_condition["reason"], resumed_condition["message"]) == (
        "TFJobResumed",
        "TFJob tj is resumed.",
    )
    cluster.set_pod("tj-worker-0", "Running")
    cluster.reconcile(at(101))
    assert cluster.conditions == [("Created", "True"), ("Suspended", "False"), ("Running", "True")]


def test_d3_a_child_left_by_a_failed_teardown_is_deleted_on_a_later_pass() -> None:
    """D3 under cleanPodPolicy None: the backoff failure deletes every child; a pod whose delete
    failed in that pass is still deleted by the next pass instead of surviving for good."""
    status = _finished_status("Failed")
    status["conditions"][-1]["message"] = (  # type: ignore[index]
        "Job tj has failed because it has reached the specified backoff limit"
    )
    job = make_job({"Worker": replica(2, "OnFailure")}, run_policy={"backoffLimit": 1}, status=status)
    left_over = pod(job, "Worker", 1, "Running")
    result = run(job, [left_over], svcs=services(job))
    assert DeletePod("tj-worker-1", left_over["metadata"]["uid"]) in result.actions
    assert {a.name for a in result.actions if isinstance(a, DeleteService)} == {"tj-worker-0", "tj-worker-1"}
    assert result.status == status


def test_d3_a_replica_failure_still_follows_clean_pod_policy_none() -> None:
    job = make_job({"Worker": replica(2, "Never")}, status=_finished_status("Failed"))
    result = run(job, [pod(job, "Worker", 0, "Running")], svcs=services(job))
    assert result.actions == ()
