"""Upstream's behaviour: Running, success policies and replica failures."""

from __future__ import annotations

from tfjob.planner import DeletePod, DeleteService

from .builders import (
    action_names,
    condition,
    conditions_of,
    make_job,
    pod,
    replica,
    run,
    running_status,
    services,
)


def test_s22_all_pods_running_sets_running_with_counts() -> None:
    job = make_job({"PS": replica(1), "Worker": replica(2)}, status=running_status(["Created"]))
    pods = [pod(job, "PS", 0, "Running"), pod(job, "Worker", 0, "Running"), pod(job, "Worker", 1, "Running")]
    result = run(job, pods, svcs=services(job))
    assert conditions_of(result) == [("Created", "True"), ("Running", "True")]
    running = condition(result, "Running")
    assert running["reason"] == "TFJobRunning"
    assert running["message"] == "TFJob ns/tj is running."
    assert result.status["replicaStatuses"] == {"PS": {"active": 1}, "Worker": {"active": 2}}
    assert result.actions == ()


def test_s23_pending_chief_keeps_the_job_created() -> None:
    job = make_job({"Chief": replica(1), "Worker": replica(2)}, status=running_status(["Created"]))
    pods = [
        pod(job, "Chief", 0, "Pending"),
        pod(job, "Worker", 0, "Running"),
        pod(job, "Worker", 1, "Running"),
    ]
    assert conditions_of(run(job, pods, svcs=services(job))) == [("Created", "True")]


def test_s24_worker0_exit_0_succeeds_and_folds_active_in_the_same_pass() -> None:
    job = make_job({"PS": replica(2), "Worker": replica(4)}, status=running_status(["Created", "Running"]))
    pods = [pod(job, "Worker", 0, "Succeeded", exit_code=0)]
    pods += [pod(job, "Worker", i, "Running") for i in (1, 2, 3)]
    pods += [pod(job, "PS", i, "Running") for i in (0, 1)]
    result = run(job, pods, svcs=services(job))
    assert conditions_of(result) == [("Created", "True"), ("Running", "False"), ("Succeeded", "True")]
    succeeded = condition(result, "Succeeded")
    assert (succeeded["reason"], succeeded["message"]) == (
        "TFJobSucceeded",
        "TFJob ns/tj successfully completed.",
    )
    assert result.status["completionTime"] == "2026-11-29T10:41:00Z"
    assert result.status["replicaStatuses"] == {"PS": {"succeeded": 2}, "Worker": {"succeeded": 4}}
    assert result.actions == ()  # cleanPodPolicy None: the PS keep running (D7)
    assert ("Normal", "TFJobSucceeded") in [(e.type, e.reason) for e in result.events]
    assert "jobs_successful" in result.counters


def test_s25_worker0_succeeded_without_exit_code_is_not_completion() -> None:
    job = make_job({"Worker": replica(2)}, status=running_status(["Created", "Running"]))
    worker0 = pod(job, "Worker", 0, "Succeeded")
    worker0["status"]["containerStatuses"] = []
    result = run(job, [worker0, pod(job, "Worker", 1, "Running")], svcs=services(job))
    assert conditions_of(result)[-1] == ("Running", "True")
    worker1 = pod(job, "Worker", 1, "Succeeded")
    assert conditions_of(run(job, [worker0, worker1], svcs=services(job)))[-1] == ("Succeeded", "True")


def test_s26_all_workers_policy_waits_for_every_worker() -> None:
    job = make_job({"Worker": replica(4)}, status=running_status(["Created"]), successPolicy="AllWorkers")
    pods = [pod(job, "Worker", 0, "Succeeded", exit_code=0)]
    pods += [pod(job, "Worker", i, "Running") for i in (1, 2, 3)]
    assert conditions_of(run(job, pods, svcs=services(job)))[-1] == ("Running", "True")
    done = [pod(job, "Worker", i, "Succeeded", exit_code=0) for i in range(4)]
    assert conditions_of(run(job, done, svcs=services(job)))[-1] == ("Succeeded", "True")


def test_s27_chief_success_under_clean_pod_policy_running_deletes_the_active_pods() -> None:
    job = make_job(
        {"Chief": replica(1), "Worker": replica(2), "PS": replica(1)},
        run_policy={"cleanPodPolicy": "Running"},
        status=running_status(["Created", "Running"]),
    )
    pods = [
        pod(job, "Chief", 0, "Succeeded", exit_code=0),
        pod(job, "Worker", 0, "Running"),
        pod(job, "Worker", 1, "Pending"),
        pod(job, "PS", 0, "Running"),
    ]
    result = run(job, pods, svcs=services(job))
    assert conditions_of(result)[-1] == ("Succeeded", "True")
    deleted_pods = {action.name for action in result.actions if isinstance(action, DeletePod)}
    deleted_services = {action.name for action in result.actions if isinstance(action, DeleteService)}
    assert deleted_pods == deleted_services == {"tj-worker-0", "tj-worker-1", "tj-ps-0"}


def test_s28_a_failed_never_worker_fails_the_job_and_is_kept() -> None:
    job = make_job({"Worker": replica(2, "Never")}, status=running_status(["Created", "Running"]))
    pods = [pod(job, "Worker", 0, "Running"), pod(job, "Worker", 1, "Failed", exit_code=1)]
    result = run(job, pods, svcs=services(job))
    assert conditions_of(result) == [("Created", "True"), ("Running", "False"), ("Failed", "True")]
    failed = condition(result, "Failed")
    assert failed["message"] == "TFJob ns/tj has failed because 1 Worker replica(s) failed."
    assert failed["reason"] == "TFJobFailed"
    assert ("Normal", "TFJobFailed", failed["message"]) in [
        (e.type, e.reason, e.message) for e in result.events
    ]
    assert not any(isinstance(action, DeletePod) for action in result.actions)
    assert result.status["completionTime"] == "2026-11-29T10:41:00Z"


def test_s29_a_failed_ps_under_a_chief_fails_the_job() -> None:
    job = make_job(
        {"Chief": replica(1), "PS": replica(1, "Never")}, status=running_status(["Created", "Running"])
    )
    pods = [pod(job, "Chief", 0, "Running"), pod(job, "PS", 0, "Failed", exit_code=1)]
    result = run(job, pods, svcs=services(job))
    assert condition(result, "Failed")["message"] == "TFJob ns/tj has failed because 1 PS replica(s) failed."


def test_s30_a_failed_evaluator_fails_the_job() -> None:
    job = make_job(
        {"Chief": replica(1), "Evaluator": replica(1)}, status=running_status(["Created", "Running"])
    )
    pods = [pod(job, "Chief", 0, "Running"), pod(job, "Evaluator", 0, "Failed", exit_code=2)]
    result = run(job, pods, svcs=services(job))
    assert conditions_of(result)[-1] == ("Failed", "True")
    assert "1 Evaluator replica(s) failed" in condition(result, "Failed")["message"]


def test_s31_first_terminal_condition_wins_d6() -> None:
    job = make_job(
        {"Chief": replica(1), "Worker": replica(1, "Never")}, status=running_status(["Created", "Running"])
    )
    pods = [pod(job, "Chief", 0, "Succeeded", exit_code=0), pod(job, "Worker", 0, "Failed", exit_code=1)]
    result = run(job, pods, svcs=services(job))
    assert conditions_of(result) == [("Created", "True"), ("Running", "False"), ("Succeeded", "True")]
    assert "jobs_failed" not in result.counters


def test_s31_chiefless_failure_before_worker_success_is_the_only_terminal_d6() -> None:
    job = make_job(
        {"PS": replica(1, "Never"), "Worker": replica(1)}, status=running_status(["Created", "Running"])
    )
    pods = [pod(job, "PS", 0, "Failed", exit_code=1), pod(job, "Worker", 0, "Succeeded", exit_code=0)]
    result = run(job, pods, svcs=services(job))
    assert conditions_of(result)[-1] == ("Failed", "True")
    assert "Succeeded" not in [c[0] for c in conditions_of(result)]
    assert "jobs_successful" not in result.counters
    assert "TFJobSucceeded" not in [event.reason for event in result.events]


def test_s32_zero_workers_succeeds_on_the_first_pass_and_creates_nothing_d6() -> None:
    job = make_job({"Worker": replica(0), "PS": replica(1)})
    result = run(job)
    assert conditions_of(result) == [("Created", "True"), ("Succeeded", "True")]
    assert action_names(result) == []  # finished in this pass: nothing is created
