"""The planner's increments reach upstream's metric names."""

from __future__ import annotations

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
