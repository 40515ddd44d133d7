"""Prometheus metrics for API requests, as a ``KubeApi`` request observer.

Public API:

- ``PrometheusRequestMetrics(registry)`` -- pass it as ``KubeApi(..., on_request=metrics)``. It counts
  ``rest_client_requests_total{verb, resource, code}`` (code ``"<error>"`` when no HTTP answer came)
  and observes ``rest_client_request_duration_seconds{verb, resource}``, after client-go's names.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["PrometheusRequestMetrics"]

_MAX_CHILDREN = 1024


class PrometheusRequestMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._requests = Counter(
            "rest_client_requests_total", "Kubernetes API requests by verb, resource and HTTP code.",
            ["verb", "resource", "code"], registry=registry,
        )
        self._duration = Histogram(
            "rest_client_request_duration_seconds",
            "Kubernetes API request latency (for watches: until the response headers).",
            ["verb", "resource"], registry=registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
        )
        # The labelled children, looked up once: ``labels()`` takes a lock and builds its key on
        # every call, and this runs on every request. Verbs and resources are the caller's own
        # names and codes are HTTP's, so the keys are few.
        self._children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    def __call__(self, verb: str, resource: str, status: int, seconds: float) -> None:
        key = (verb, resource, status)
        children = self._children.get(key)
        if children is None:
            children = (
                self._requests.labels(verb, resource, str(status) if status else "<error>"),
                self._duration.labels(verb, resource),
            )
            if len(self._children) < _MAX_CHILDREN:
                self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)
