"""Exit codes, timestamps, abnormal-pod events, managedBy and malformed input."""

from __future__ import annotations

from datetime import datetime

import pytest

from kubeobjects.times import format_time
from tfjob.planner import is_retryable_exit_code, parse_time
from tfjob.planner.abnormal import abnormal_pod_events
from tfjob.planner.exitcodes import effective_exit_code

from .builders import T0, make_job, pod, replica, run, running_status, services


@pytest.mark.parametrize(
    ("code", "retryable"), [(0, False), (1, False), (127, False), (128, True), (137, True)]
)
def test_exit_code_table_d9(code: int, retryable: bool) -> None:
    assert is_retryable_exit_code(code) is retryable


def test_no_exit_code_is_the_retryable_sentinel_d9() -> None:
    job = make_job({"Worker": replica(1)})
    assert effective_exit_code(pod(job, "Worker", 0, "Failed")) == 0xBEEF
    assert is_retryable_exit_code(effective_exit_code(pod(job, "Worker", 0, "Failed")))


def test_timestamps_are_rfc3339_utc_seconds() -> None:
    assert format_time(T0) == "2026-11-29T10:41:00Z"
    assert parse_time("2026-11-29T10:41:00Z") == T0
    assert parse_time("not a time") is None and parse_time(None) is None
    with pytest.raises(ValueError, match="timezone-aware"):
        format_time(datetime(2026, 1, 1))


def test_abnormal_pod_events_name_the_container_state() -> None:
    job = make_job({"Worker": replica(1)})
    crashing = pod(job, "Worker", 0, "Running", waiting="CrashLoopBackOff", restarts=2)
    errored = pod(job, "Worker", 0, "Running", exit_code=1)
    events = abnormal_pod_events([crashing, errored])
    assert [(e.type, e.reason) for e in events] == [("Warning", "CrashLoopBackOff"), ("Warning", "Error")]
    assert events[1].message == "Error pod tj-worker-0 container tensorflow exitCode: 1 terminated message: "
    assert abnormal_pod_events([pod(job, "Worker", 0, "Running")]) == []


def test_unschedulable_pending_pod_reports_its_condition() -> None:
    job = make_job({"Worker": replica(1)})
    pending = pod(job, "Worker", 0, "Pending")
    pending["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes"}
    ]
    [event] = abnormal_pod_events([pending])
    assert (event.reason, event.message) == (
        "Unschedulable",
        "Error pod tj-worker-0 condition message: 0/1 nodes",
    )


@pytest.mark.parametrize("managed_by", ["kueue.x-k8s.io/multikueue", "someone/else"])
def test_a_job_managed_elsewhere_is_left_alone(managed_by: str) -> None:
    job = make_job({"Worker": replica(1)}, run_policy={"managedBy": managed_by})
    result = run(job)
    assert (result.status, result.actions, result.events, result.counters) == ({}, (), (), ())


def test_a_job_being_deleted_gets_nothing() -> None:
    job = make_job({"Worker": replica(1)}, status=running_status(["Created", "Running"]))
    job["metadata"]["deletionTimestamp"] = "2026-11-29T10:41:00Z"
    result = run(job, [pod(job, "Worker", 0, "Failed", exit_code=1)], svcs=services(job))
    assert result.actions == () and result.status == job["status"]


def test_pods_of_another_owner_are_ignored() -> None:
    job = make_job({"Worker": replica(1)})
    stranger = pod(job, "Worker", 0, "Running")
    stranger["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    assert [type(a).__name__ for a in run(job, [stranger]).actions] == ["CreatePod", "CreateService"]


def test_malformed_jobs_and_pods_do_not_crash_the_planner() -> None:
    bare = {"metadata": {"name": "x"}, "spec": {"tfReplicaSpecs": {"Worker": None}}, "status": "junk"}
    result = run(bare)  # type: ignore[arg-type]
    assert [c["type"] for c in result.status["conditions"]] == ["Created"]
    job = make_job({"Worker": replica(1)})
    odd = pod(job, "Worker", 0, "Running")
    odd["status"] = {"phase": 7, "containerStatuses": "nope"}
    odd["metadata"]["labels"]["training.kubeflow.org/replica-index"] = "zero"
    assert [type(a).__name__ for a in run(job, [odd]).actions] == ["CreatePod", "CreateService"]
    with pytest.raises(ValueError, match="timezone-aware"):
        run(job, now=datetime(2026, 1, 1))
