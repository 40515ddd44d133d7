"""Prometheus metrics for API requests, as a ``KubeApi`` request observer.

Public API:

- ``PrometheusRequestMetrics(registry)`` -- pass it as ``KubeApi(..., on_request=metrics)``. It counts
  ``rest_client_requests_total{verb, resource, code}`` (code ``"<error>"`` when no HTTP answer came)
  and observes ``rest_client_request_duration_seconds{verb, resource}``, after client-go's names.
- ``LabelledChildren(metric)`` -- ``children(*label_values)`` is ``metric.labels(*label_values)``,
  looked up once per set of values: ``labels()`` takes a lock and builds its key on every call,
  and the operator's metrics are counted on every request, pass and queue operation. At most
  ``limit`` children are remembered (the label values are the callers' own names, so few).
"""

from __future__ import annotations

from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["LabelledChildren", "PrometheusRequestMetrics"]

_MAX_CHILDREN = 1024

_Metric = TypeVar("_Metric", Counter, Gauge, Histogram)


class LabelledChildren(Generic[_Metric]):
    def __init__(self, metric: _Metric, limit: int = _MAX_CHILDREN) -> None:
        self.metric: _Metric = metric
        self._limit = limit
        self._children: dict[tuple[str, ...], _Metric] = {}

    def __call__(self, *label_values: str) -> _Metric:
        child = self._children.get(label_values)
        if child is None:
            child = self.metric.labels(*label_values)
            if len(self._children) < self._limit:
                self._children[label_values] = child
        return child


class PrometheusRequestMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._requests = LabelledChildren(Counter(
            "rest_client_requests_total", "Kubernetes API requests by verb, resource and HTTP code.",
            ["verb", "resource", "code"], registry=registry,
        ))
        self._duration = LabelledChildren(Histogram(
            "rest_client_request_duration_seconds",
            "Kubernetes API request latency (for watches: until the response headers).",
            ["verb", "resource"], registry=registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
        ))

    def __call__(self, verb: str, resource: str, status: int, seconds: float) -> None:
        self._requests(verb, resource, str(status) if status else "<error>").inc()
        self._duration(verb, resource).observe(seconds)
