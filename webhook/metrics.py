"""The webhook's Prometheus metrics, registered on an explicit registry (one per process or test)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# Admission must answer well inside the API server's timeout; buckets resolve the sub-10 ms range.
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class WebhookMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "tfgang_webhook_requests_total",
            "Admission HTTP requests by path and result (allowed, denied, or the HTTP error).",
            ["path", "result"],
            registry=registry,
        )
        self.latency = Histogram(
            "tfgang_webhook_request_duration_seconds",
            "Time to answer an admission HTTP request, by path and result.",
            ["path", "result"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.in_flight = Gauge(
            "tfgang_webhook_requests_in_flight",
            "Admission requests being answered.",
            ["path"],
            registry=registry,
        )
        self._request_children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}
        self._decision_children: dict[tuple[str, str, bool, str], Counter] = {}
        self.decisions = Counter(
            "tfgang_webhook_admission_decisions_total",
            "Admission decisions by path, operation, outcome and reason.",
            ["path", "operation", "allowed", "reason"],
            registry=registry,
        )
        self.certificate_expiry = Gauge(
            "tfgang_webhook_certificate_expiry_timestamp_seconds",
            "Unix time at which the serving certificate in use expires (0: none loaded).",
            registry=registry,
        )
        self.certificate_reloads = Counter(
            "tfgang_webhook_certificate_reloads_total",
            "Times a new serving certificate was loaded without a restart.",
            registry=registry,
        )
        self.cached_tfjobs = Gauge(
            "tfgang_webhook_cached_tfjobs",
            "TFJobs in the webhook's admission cache.",
            registry=registry,
        )

    # prometheus_client's labels() costs a lock and a tuple build per call; the label sets here are
    # few, so their children are remembered (this runs on every admission).

    def observe_request(self, path: str, result: str, seconds: float) -> None:
        key = (path, result)
        children = self._request_children.get(key)
        if children is None:
            children = (self.requests.labels(path, result), self.latency.labels(path, result))
            self._request_children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def count_decision(self, path: str, operation: str, allowed: bool, reason: str) -> None:
        key = (path, operation, allowed, reason)
        child = self._decision_children.get(key)
        if child is None:
            child = self.decisions.labels(path, operation, "true" if allowed else "false", reason)
            self._decision_children[key] = child
        child.inc()
