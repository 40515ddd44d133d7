"""The request observer counts every request under its own labels, however often the same ones
come (its labelled children are looked up once)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kube.apimetrics import PrometheusRequestMetrics


def test_repeated_and_distinct_requests_are_each_counted_under_their_labels() -> None:
    registry = CollectorRegistry()
    observe = PrometheusRequestMetrics(registry)
    for _ in range(3):
        observe("create", "pods", 201, 0.002)
    observe("create", "pods", 409, 0.004)
    observe("create", "pods", 0, 0.5)

    def count(code: str) -> float | None:
        return registry.get_sample_value(
            "rest_client_requests_total", {"verb": "create", "resource": "pods", "code": code}
        )

    assert (count("201"), count("409"), count("<error>")) == (3.0, 1.0, 1.0)
    assert registry.get_sample_value(
        "rest_client_request_duration_seconds_count", {"verb": "create", "resource": "pods"}
    ) == 5.0
    assert registry.get_sample_value(
        "rest_client_request_duration_seconds_sum", {"verb": "create", "resource": "pods"}
    ) == 0.002 * 3 + 0.004 + 0.5
