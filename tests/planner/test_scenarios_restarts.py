"""Upstream's behaviour: restarts, ExitCode, backoffLimit and activeDeadlineSeconds."""

from __future__ import annotations

from tfjob.planner import CreatePod, DeletePod, DeletePodGroup, DeleteService

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


def _restart_job(policy: str) -> Cluster:
    job = make_job({"Worker": replica(1, policy), "PS": replica(1, policy)})
    cluster = Cluster(job, NO_GANG)
    cluster.reconcile()
    cluster.set_pod("tj-worker-0", "Running")
    cluster.set_pod("tj-ps-0", "Running")
    cluster.reconcile()
    assert cluster.conditions[-1] == ("Running", "True")
    return cluster


def test_s33_retryable_exit_code_restarts_the_pod() -> None:
    cluster = _restart_job("ExitCode")
    cluster.set_pod("tj-worker-0", "Failed", exit_code=137)
    restart = cluster.reconcile()
    assert [type(action) for action in restart.actions] == [DeletePod]
    assert cluster.conditions == [("Created", "True"), ("Restarting", "True")]
    assert cluster.job is not None
    restarting = cluster.job["status"]["conditions"][-1]
    assert restarting["reason"] == "TFJobRestarting"
    assert restarting["message"] == "job tj is restarting because Worker replica(s) failed."
    assert ("Warning", "TFJobRestarting") in [(e.type, e.reason) for e in restart.events]
    assert ("Normal", "ExitedWithCode", "Pod: ns.tj-worker-0 exited with code 137") in [
        (e.type, e.reason, e.message) for e in restart.events
    ]
    assert cluster.job["status"]["replicaStatuses"]["Worker"] == {"failed": 1}
    assert sorted(restart.counters) == ["failed_pods", "jobs_restarted"]
    recreate = cluster.reconcile()
    assert [action.name for action in recreate.actions if isinstance(action, CreatePod)] == ["tj-worker-0"]
    assert cluster.conditions[-1] == ("Restarting", "True")
    cluster.set_pod("tj-worker-0", "Running")
    cluster.reconcile()
    assert cluster.conditions == [("Created", "True"), ("Running", "True")]


def test_s34_permanent_exit_code_fails_the_job_and_keeps_the_pod() -> None:
    job = make_job({"Worker": replica(1, "ExitCode")}, status=running_status(["Created", "Running"]))
    result = run(job, [pod(job, "Worker", 0, "Failed", exit_code=1)], svcs=services(job))
    failed = condition(result, "Failed")
    assert failed["message"] == 'job "tj" is failing because "Worker" replica(s) failed.'
    assert ("Warning", "TFJobFailed") in [(e.type, e.reason) for e in result.events]
    assert result.actions == ()


def test_s35_exit_code_pod_evicted_before_start_is_restarted() -> None:
    job = make_job({"Worker": replica(1, "ExitCode")}, status=running_status(["Created", "Running"]))
    evicted = pod(job, "Worker", 0, "Failed")
    evicted["status"]["containerStatuses"] = []
    result = run(job, [evicted], svcs=services(job))
    assert [type(action) for action in result.actions] == [DeletePod]
    assert conditions_of(result)[-1] == ("Restarting", "True")


def test_s36_on_failure_eviction_deletes_restarts_and_recreates() -> None:
    cluster = _restart_job("OnFailure")
    cluster.set_pod("tj-worker-0", "Failed")
    assert [type(action) for action in cluster.reconcile().actions] == [DeletePod]
    assert cluster.conditions[-1] == ("Restarting", "True")
    assert [type(action) for action in cluster.reconcile().actions] == [CreatePod]
    assert cluster.job is not None and cluster.job["status"]["restartCounts"] == {"Worker": 1}


def test_s37_chiefless_ps_restart_is_hidden_by_running_workers() -> None:
    job = make_job(
        {"PS": replica(1, "OnFailure"), "Worker": replica(2)}, status=running_status(["Created", "Running"])
    )
    pods = [pod(job, "PS", 0, "Failed"), pod(job, "Worker", 0, "Running"), pod(job, "Worker", 1, "Running")]
    result = run(job, pods, svcs=services(job))
    assert conditions_of(result) == [("Created", "True"), ("Running", "True")]
    assert "TFJobRestarting" in [event.reason for event in result.events]
    assert [action.name for action in result.actions if isinstance(action, DeletePod)] == ["tj-ps-0"]


def test_s38_restarting_never_hides_a_permanent_failure_d5() -> None:
    job = make_job(
        {"Worker": replica(3, "Never"), "PS": replica(1, "OnFailure")},
        status=running_status(["Created", "Running"]),
    )
    pods = [pod(job, "PS", 0, "Failed"), pod(job, "Worker", 0, "Running"), pod(job, "Worker", 1, "Running")]
    pods.append(pod(job, "Worker", 2, "Failed", exit_code=1))
    result = run(job, pods, svcs=services(job))
    assert conditions_of(result)[-1] == ("Failed", "True")
    assert "1 Worker replica(s) failed" in condition(result, "Failed")["message"]


def test_s38_an_earlier_restarting_condition_is_not_sticky_d5() -> None:
    job = make_job(
        {"Worker": replica(3, "Never"), "PS": replica(1, "OnFailure")},
        status=running_status(["Created", "Restarting"]),
    )
    pods = [pod(job, "PS", 0, "Pending"), pod(job, "Worker", 0, "Pending"), pod(job, "Worker", 1, "Pending")]
    pods.append(pod(job, "Worker", 2, "Failed", exit_code=1))
    result = run(job, pods, svcs=services(job))
    assert conditions_of(result) == [("Created", "True"), ("Restarting", "True"), ("Failed", "True")]


def test_s39_seed_backoff_limit_counts_in_place_restarts_and_tears_everything_down_d2_d3() -> None:
    job = make_job(
        {"PS": replica(1, "Always"), "Worker": replica(3, "OnFailure")},
        run_policy={"backoffLimit": 3},
        status=running_status(["Created", "Running"]),
    )
    group = podgroup(job, "Running")
    pods = [
        pod(job, "PS", 0, "Running", restarts=1),
        pod(job, "Worker", 0, "Running", waiting="CrashLoopBackOff", restarts=1),
        pod(job, "Worker", 1, "Running"),
        pod(job, "Worker", 2, "Running"),
    ]
    below = run(job, pods, svcs=services(job), group=group, settings=VOLCANO)
    assert conditions_of(below)[-1] == ("Running", "True")
    assert ("Warning", "CrashLoopBackOff") in [(e.type, e.reason) for e in below.events]
    pods[1] = pod(job, "Worker", 0, "Running", restarts=2)
    result = run(job, pods, svcs=services(job), group=group, settings=VOLCANO, now=at(37))
    failed = condition(result, "Failed")
    assert failed["message"] == "Job tj has failed because it has reached the specified backoff limit"
    assert failed["reason"] == "TFJobFailed"
    assert result.status["completionTime"] == "2026-11-29T10:41:37Z"
    assert {a.name for a in result.actions if isinstance(a, DeletePod)} == {
        "tj-ps-0",
        "tj-worker-0",
        "tj-worker-1",
        "tj-worker-2",
    }
    assert len([a for a in result.actions if isinstance(a, DeleteService)]) == 4
    assert any(isinstance(a, DeletePodGroup) for a in result.actions)
    assert ("Normal", "TFJobFailed") in [(e.type, e.reason) for e in result.events]


def test_s39_recorded_recreations_count_toward_backoff_limit_d2() -> None:
    status = running_status(["Created", "Running"]) | {"restartCounts": {"Worker": 2}}
    job = make_job({"Worker": replica(2, "OnFailure")}, run_policy={"backoffLimit": 3}, status=status)
    pods = [pod(job, "Worker", 0, "Running", restarts=1), pod(job, "Worker", 1, "Running")]
    result = run(job, pods, svcs=services(job))
    assert conditions_of(result)[-1] == ("Failed", "True")


def test_s40_backoff_limit_zero_fails_on_the_first_failed_pod_and_deletes_pods_d3() -> None:
    job = make_job(
        {"Worker": replica(2, "Never")},
        run_policy={"backoffLimit": 0},
        status=running_status(["Created", "Running"]),
    )
    pods = [pod(job, "Worker", 0, "Running"), pod(job, "Worker", 1, "Failed", exit_code=1)]
    result = run(job, pods, svcs=services(job))
    assert condition(result, "Failed")["message"] == (
        "Job tj has failed because it has reached the specified backoff limit"
    )
    assert {a.name for a in result.actions if isinstance(a, DeletePod)} == {"tj-worker-0", "tj-worker-1"}


def test_s41_exit_code_recreations_count_toward_backoff_limit_d2() -> None:
    job = make_job({"Worker": replica(1, "ExitCode")}, run_policy={"backoffLimit": 2})
    cluster = Cluster(job, NO_GANG)
    cluster.reconcile()
    for attempt in (1, 2):
        cluster.set_pod("tj-worker-0", "Failed", exit_code=137)  # restartCount stays 0 under Never
        assert [type(a) for a in cluster.reconcile().actions] == [DeletePod]
        assert cluster.job is not None and cluster.job["status"]["restartCounts"] == {"Worker": attempt}
        if attempt == 1:
            assert [type(a) for a in cluster.reconcile().actions] == [CreatePod]
    cluster.reconcile()
    assert cluster.conditions[-1] == ("Failed", "True")
    assert cluster.job is not None
    assert "backoff limit" in cluster.job["status"]["conditions"][-1]["message"]
    assert cluster.pods == {}


def test_s42_active_deadline_is_a_timer_and_deletes_pods_d1_d3() -> None:
    job = make_job({"Worker": replica(1)}, run_policy={"activeDeadlineSeconds": 60})
    cluster = Cluster(job, NO_GANG)
    first = cluster.reconcile(at(0))
    assert first.requeue_after == 60
    cluster.set_pod("tj-worker-0", "Running")
    assert cluster.reconcile(at(10)).requeue_after == 50
    timed_out = cluster.reconcile(at(60))  # the timer fires: no pod event needed
    assert cluster.conditions[-1] == ("Failed", "True")
    assert cluster.job is not None
    assert cluster.job["status"]["conditions"][-1]["message"] == (
        "Job tj has failed because it was active longer than specified deadline"
    )
    assert [type(a) for a in timed_out.actions] == [DeletePod, DeleteService]
    assert timed_out.requeue_after is None
