"""The planner's increments reach upstream's metric names; the cached jobs are exported by state."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controller.metrics import ControllerMetrics


def test_job_counters_are_labelled_and_failed_pods_is_not() -> None:
    metrics = ControllerMetrics()
    metrics.count_job("jobs_restarted", "ns")
    metrics.count_job("failed_pods", "ns")
    metrics.count_job("failed_pods", "other")
    sample = metrics.registry.get_sample_value
    labels = {"job_namespace": "ns", "framework": "tensorflow"}
    assert sample("training_operator_jobs_restarted_total", labels) == 1
    assert sample("failed_pods_total") == 2


def test_an_unknown_increment_changes_nothing() -> None:
    metrics = ControllerMetrics()
    metrics.count_job("no_such_counter", "ns")
    assert metrics.registry.get_sample_value("failed_pods_total") == 0


def _job(name: str, created: str, *states: str, suspend: bool = False) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": created},
        "spec": {"runPolicy": {"suspend": suspend}},
        "status": {"conditions": [{"type": state, "status": "True"} for state in states]},
    }


def test_jobs_are_exported_by_state_and_the_oldest_one_waiting_to_start() -> None:
    metrics = ControllerMetrics()
    jobs = [
        _job("fresh", "2026-12-01T10:00:00Z"),
        _job("waiting", "2026-12-01T09:00:00Z", "Created"),
        _job("parked", "2026-12-01T08:00:00Z", "Created", "Suspended", suspend=True),
        _job("running", "2026-12-01T07:00:00Z", "Created", "Running"),
        _job("done", "2026-12-01T06:00:00Z", "Created", "Running", "Succeeded"),
    ]
    metrics.watch_jobs(lambda: jobs)
    sample = metrics.registry.get_sample_value
    counts = {state: sample("tfgang_controller_jobs", {"condition": state}) for state in
              ("None", "Created", "Suspended", "Running", "Succeeded", "Failed")}
    assert counts == {"None": 1, "Created": 1, "Suspended": 1, "Running": 1, "Succeeded": 1, "Failed": None}
    oldest = sample("tfgang_controller_oldest_pending_job_timestamp_seconds")
    assert oldest == datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()
    jobs[1] = _job("waiting", "2026-12-01T09:00:00Z", "Created", "Running")
    assert sample("tfgang_controller_oldest_pending_job_timestamp_seconds") == datetime(
        2026, 12, 1, 10, 0, tzinfo=UTC
    ).timestamp()
    jobs[0] = _job("fresh", "2026-12-01T10:00:00Z", "Created", "Running")
    # None waiting: no sample at all, so an age alert has nothing to fire on.
    assert sample("tfgang_controller_oldest_pending_job_timestamp_seconds") is None
