"""The controller's Prometheus metrics, with upstream's names so existing dashboards keep working.

Every metric lives in an explicit registry made per controller instance, so tests can run several
controllers in one process without "duplicated timeseries" errors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kube.apimetrics import LabelledChildren, PrometheusRequestMetrics
from kube.workqueue import PrometheusWorkQueueMetrics
from kubeobjects.meta import mapping, sequence
from kubeobjects.times import parse_time
from tfjob.constants import COND_CREATED, CONTROLLER_NAME, FRAMEWORK
from tfjob.planner import COUNTER_FAILED_PODS, last_condition_type

# The planner's counter names -> upstream's job counters (upstream v1.9).
JOB_COUNTERS = {
    "jobs_created": ("training_operator_jobs_created_total", "Number of TFJobs created"),
    "jobs_deleted": ("training_operator_jobs_deleted_total", "Number of TFJobs deleted by their TTL"),
    "jobs_successful": ("training_operator_jobs_successful_total", "Number of TFJobs that succeeded"),
    "jobs_failed": ("training_operator_jobs_failed_total", "Number of TFJobs that failed"),
    "jobs_restarted": ("training_operator_jobs_restarted_total", "Number of TFJob restarts"),
}


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self._job_counters = {
            key: Counter(name.removesuffix("_total"), text, ["job_namespace", "framework"], registry=r)
            for key, (name, text) in JOB_COUNTERS.items()
        }
        self.created_pods = Counter("created_pods", "Number of pods created", registry=r)
        self.deleted_pods = Counter("deleted_pods", "Number of pods deleted", registry=r)
        self.failed_pods = Counter(
            "failed_pods", "Number of failed pods deleted to be recreated", registry=r
        )
        self.service_creation_succeeded = Counter(
            "succeeded_service_creation", "Number of services created", registry=r
        )
        self.service_creation_failed = Counter(
            "failed_service_creation", "Number of failed service creations", registry=r
        )
        self.created_pod_groups = Counter("created_pod_groups", "Number of PodGroups created", registry=r)
        self.deleted_pod_groups = Counter("deleted_pod_groups", "Number of PodGroups deleted", registry=r)
        self.reconcile_total = Counter(
            "controller_runtime_reconcile", "Reconcile passes by result", ["controller", "result"], registry=r
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors", "Reconcile passes that failed", ["controller"], registry=r
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Duration of one reconcile pass",
            ["controller"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            registry=r,
        )
        self.api_writes = Counter(
            "tfgang_controller_api_writes", "API writes by the controller", ["resource", "verb"], registry=r
        )
        self._reconcile_time = self.reconcile_time.labels(controller=CONTROLLER_NAME)
        self._reconcile_results = LabelledChildren(self.reconcile_total)
        self._writes = LabelledChildren(self.api_writes)
        # workqueue_depth, workqueue_retries_total, ... with client-go's names, labelled by queue.
        self.work_queue = PrometheusWorkQueueMetrics(r)
        self.is_leader = Gauge(
            "tfgang_controller_is_leader", "1 while this replica holds the lease", registry=r
        )
        # rest_client_requests_total / rest_client_request_duration_seconds: pass as KubeApi's on_request.
        self.api_requests = PrometheusRequestMetrics(r)

    def watch_jobs(self, jobs: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        """Export the cached jobs by state and the oldest one still waiting to run, read at scrape time."""
        self.registry.register(JobStateCollector(jobs))

    def count_job(self, counter: str, namespace: str) -> None:
        """Count one of the planner's increments (``Plan.counters``)."""
        if counter == COUNTER_FAILED_PODS:
            self.failed_pods.inc()
            return
        metric = self._job_counters.get(counter)
        if metric is not None:
            metric.labels(job_namespace=namespace, framework=FRAMEWORK).inc()

    def job_count(self, counter: str, namespace: str) -> float:
        """The current value of a job counter (tests and the benchmark read it)."""
        name = JOB_COUNTERS[counter][0]
        value = self.registry.get_sample_value(name, {"job_namespace": namespace, "framework": FRAMEWORK})
        return value or 0.0

    def count_write(self, resource: str, verb: str) -> None:
        """One API write by the controller (``tfgang_controller_api_writes``)."""
        self._writes(resource, verb).inc()

    def observe_reconcile(self, seconds: float, ok: bool) -> None:
        self._reconcile_time.observe(seconds)
        self._reconcile_results(CONTROLLER_NAME, "success" if ok else "error").inc()
        if not ok:
            self.reconcile_errors.labels(controller=CONTROLLER_NAME).inc()


class JobStateCollector(Collector):
    """``tfgang_controller_jobs{condition}``: the cached TFJobs by their STATE (last condition), and
    ``tfgang_controller_oldest_pending_job_timestamp_seconds``: the creation time of the oldest job
    whose state is still Created and that is not suspended (no sample when there is none), so an
    alert can say "a job has waited more than N minutes to start" without a label per job."""

    def __init__(self, jobs: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        self._jobs = jobs

    def describe(self) -> Iterator[Metric]:
        # Without describe() the registry calls collect() at registration, before any cache exists.
        yield _jobs_family()
        yield _pending_family()

    def collect(self) -> Iterator[Metric]:
        by_state: dict[str, int] = {}
        oldest: float | None = None
        for job in self._jobs():
            conditions = sequence(mapping(job.get("status")).get("conditions"))
            state = last_condition_type(list(conditions)) or "None"
            by_state[state] = by_state.get(state, 0) + 1
            if state in (COND_CREATED, "None") and not _suspended(job):
                created = parse_time(mapping(job.get("metadata")).get("creationTimestamp"))
                if created is not None:
                    moment = created.timestamp()
                    oldest = moment if oldest is None else min(oldest, moment)
        jobs = _jobs_family()
        for state, count in sorted(by_state.items()):
            jobs.add_metric([state], count)
        yield jobs
        pending = _pending_family()
        if oldest is not None:
            pending.add_metric([], oldest)
        yield pending


def _jobs_family() -> GaugeMetricFamily:
    return GaugeMetricFamily("tfgang_controller_jobs", "TFJobs in the cache by state", labels=["condition"])


def _pending_family() -> GaugeMetricFamily:
    return GaugeMetricFamily(
        "tfgang_controller_oldest_pending_job_timestamp_seconds",
        "Creation time of the oldest TFJob not yet running (state Created, not suspended)",
    )


def _suspended(job: Mapping[str, Any]) -> bool:
    return mapping(mapping(job.get("spec")).get("runPolicy")).get("suspend") is True
