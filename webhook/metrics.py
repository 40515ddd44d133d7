"""The webhook's Prometheus metrics, registered on an explicit registry (one per process or test).

The four families counted on every review (requests, their latency, requests in flight, decisions)
are kept as plain numbers and turned into metric families only when the registry is read
(``_ReviewCounts``, a collector of our own). prometheus_client's metric children take a lock on
every increment, and a review made six of them: about a tenth of the webhook's own instructions
per review (``bench/review_cost.py``). The webhook counts on its event loop's thread alone; a
scrape from another thread may see one review counted in the requests and not yet in its
latency, never a torn number. Names, labels, help texts, buckets and ``_created`` samples are
what the prometheus_client metrics exposed.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable, Iterator
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

# Admission must answer well inside the API server's timeout; buckets resolve the sub-10 ms range.
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

# (name, help): counters are named without ``_total``, which the exposition adds.
_REQUESTS = (
    "tfgang_webhook_requests",
    "Admission HTTP requests by path and result (allowed, denied, or the HTTP error).",
)
_LATENCY = (
    "tfgang_webhook_request_duration_seconds",
    "Time to answer an admission HTTP request, by path and result.",
)
_IN_FLIGHT = ("tfgang_webhook_requests_in_flight", "Admission requests being answered.")
_DECISIONS = (
    "tfgang_webhook_admission_decisions",
    "Admission decisions by path, operation, outcome and reason.",
)


# The buckets' ``le`` label values, as prometheus_client writes them ("+Inf" last).
_BOUNDS_TEXT: Final = tuple(floatToGoString(bound) for bound in (*LATENCY_BUCKETS, float("inf")))  # type: ignore[no-untyped-call]


class InFlight:
    """Requests being answered on one path (a gauge)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


class _Requests:
    """The requests of one (path, result): their count, latency buckets (not cumulative) and sum."""

    __slots__ = ("buckets", "count", "created", "total_seconds")

    def __init__(self) -> None:
        self.count = 0
        self.total_seconds = 0.0
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)  # the last: above every bound (+Inf)
        self.created = time.time()


class _ReviewCounts(Collector):
    def __init__(self) -> None:
        self.in_flight: dict[str, InFlight] = {}
        self.requests: dict[tuple[str, str], _Requests] = {}
        # (path, operation, allowed, reason) -> [count, created]
        self.decisions: dict[tuple[str, str, bool, str], list[float]] = {}

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(*_REQUESTS, labels=("path", "result"))
        latency = HistogramMetricFamily(*_LATENCY, labels=("path", "result"))
        for (path, result), counted in list(self.requests.items()):
            labels = [path, result]
            requests.add_metric(labels, counted.count, created=counted.created)
            cumulative, buckets = 0, []
            for bound, count in zip(_BOUNDS_TEXT, counted.buckets, strict=True):
                cumulative += count
                buckets.append((bound, float(cumulative)))
            latency.add_metric(labels, buckets, counted.total_seconds)
            latency.samples.append(
                Sample(f"{_LATENCY[0]}_created", {"path": path, "result": result}, counted.created)
            )
        in_flight = GaugeMetricFamily(*_IN_FLIGHT, labels=("path",))
        for path, gauge in list(self.in_flight.items()):
            in_flight.add_metric([path], gauge.count)
        decisions = CounterMetricFamily(*_DECISIONS, labels=("path", "operation", "allowed", "reason"))
        for (path, operation, allowed, reason), (decided, created) in list(self.decisions.items()):
            decisions.add_metric(
                [path, operation, "true" if allowed else "false", reason], decided, created=created
            )
        yield from (requests, latency, in_flight, decisions)

    def describe(self) -> Iterable[Metric]:
        # The names, for the registry's duplicate check, without reading any count.
        return [
            CounterMetricFamily(*_REQUESTS, labels=("path", "result")),
            HistogramMetricFamily(*_LATENCY, labels=("path", "result")),
            GaugeMetricFamily(*_IN_FLIGHT, labels=("path",)),
            CounterMetricFamily(*_DECISIONS, labels=("path", "operation", "allowed", "reason")),
        ]


class WebhookMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._reviews = _ReviewCounts()
        registry.register(self._reviews)
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

    def in_flight(self, path: str) -> InFlight:
        """The in-flight gauge of ``path`` (shown from now on, at 0 until a request comes)."""
        gauge = self._reviews.in_flight.get(path)
        if gauge is None:
            gauge = self._reviews.in_flight[path] = InFlight()
        return gauge

    def observe_request(self, path: str, result: str, seconds: float) -> None:
        key = (path, result)
        counted = self._reviews.requests.get(key)
        if counted is None:
            counted = self._reviews.requests[key] = _Requests()
        counted.count += 1
        counted.total_seconds += seconds
        counted.buckets[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1

    def count_decision(self, path: str, operation: str, allowed: bool, reason: str) -> None:
        key = (path, operation, allowed, reason)
        counted = self._reviews.decisions.get(key)
        if counted is None:
            self._reviews.decisions[key] = [1, time.time()]
        else:
            counted[0] += 1
