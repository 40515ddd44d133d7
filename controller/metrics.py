"""The controller's Prometheus metrics, with upstream's names so existing dashboards keep working.

Every metric lives in an explicit registry made per controller instance, so tests can run several
controllers in one process without "duplicated timeseries" errors.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kube.workqueue import PrometheusWorkQueueMetrics
from tfjob.constants import CONTROLLER_NAME, FRAMEWORK
from tfjob.planner import COUNTER_FAILED_PODS

# The planner's counter names -> upstream's job counters (reference §7.1).
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
        # workqueue_depth, workqueue_retries_total, ... with client-go's names, labelled by queue.
        self.work_queue = PrometheusWorkQueueMetrics(r)
        self.is_leader = Gauge(
            "tfgang_controller_is_leader", "1 while this replica holds the lease", registry=r
        )

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

    def observe_reconcile(self, seconds: float, ok: bool) -> None:
        self.reconcile_time.labels(controller=CONTROLLER_NAME).observe(seconds)
        self.reconcile_total.labels(controller=CONTROLLER_NAME, result="success" if ok else "error").inc()
        if not ok:
            self.reconcile_errors.labels(controller=CONTROLLER_NAME).inc()
