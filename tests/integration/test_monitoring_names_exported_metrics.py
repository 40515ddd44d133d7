"""Every metric the chart's dashboard panels and alert rules read is one the components really
export: read from the ``/metrics`` of a running webhook and controller, never from a hand list; and
the controller's job-state metrics follow a real job from waiting for its gang to running."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.chart.monitoring import dashboard_expressions, metric_names, rule_expressions

from .cluster import Cluster, admit_and_wait_for_pods, eventually, simple_job, wait_for_state
from .operator import WebhookHandle, controller_process, metrics_text

# The sample names each metric type is exposed under (Prometheus text format).
_SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "untyped": ("",),
    "info": ("_info",),
}


def exported_samples(text: str) -> set[str]:
    """Every sample name a /metrics page can carry, from its ``# TYPE`` lines (present even for a
    labelled metric that has no series yet)."""
    names: set[str] = set()
    for line in text.splitlines():
        if not line.startswith("# TYPE "):
            continue
        _, _, name, kind = line.split()
        base = name.removesuffix("_total") if kind == "counter" else name
        names.update(base + suffix for suffix in _SUFFIXES.get(kind, ("",)))
    return names


def test_every_metric_of_the_dashboard_and_the_alerts_is_exported(
    webhook: WebhookHandle, controller_kubeconfig: str, apiserver: Any, tmp_path: Path
) -> None:
    exported = exported_samples(metrics_text(webhook.ops_port))
    with controller_process(controller_kubeconfig, tmp_path) as (_process, ops_port):
        exported |= exported_samples(metrics_text(ops_port))
    # The new families, so the comparison below is against a real page and not an empty one.
    assert {"tfgang_controller_jobs", "rest_client_requests_total", "workqueue_depth"} <= exported
    assert "tfgang_webhook_certificate_expiry_timestamp_seconds" in exported
    expressions = {
        **{f"alert {k}": v for k, v in rule_expressions().items()},
        **{f"panel {k}": v for k, v in dashboard_expressions().items()},
    }
    assert len(expressions) > 20
    unknown = {
        where: sorted(metric_names(expr) - exported)
        for where, expr in expressions.items()
        if metric_names(expr) - exported
    }
    assert not unknown, f"not exported by the webhook or the controller: {unknown}"
    assert all(metric_names(expr) for expr in expressions.values())


def _samples(text: str, name: str) -> dict[str, float]:
    """``{labels: value}`` of one metric's samples on a /metrics page."""
    found = {}
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            series, value = line.rsplit(" ", 1)
            found[series[len(name) :]] = float(value)
    return found


async def test_a_job_waiting_for_its_gang_is_the_oldest_pending_until_it_runs(
    cluster: Cluster, controller_kubeconfig: str, tmp_path: Path
) -> None:
    ns = cluster.namespace
    with controller_process(controller_kubeconfig, tmp_path, "--namespace", ns) as (_process, ops_port):
        created = await cluster.create_job(simple_job("waits", ns))
        await eventually(lambda: cluster.podgroup("waits"), what="PodGroup waits")
        await wait_for_state(cluster, "waits", "Created")

        async def page() -> str:
            return await asyncio.to_thread(metrics_text, ops_port)

        waiting = await page()
        created_at = datetime.fromisoformat(created["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
        assert _samples(waiting, "tfgang_controller_oldest_pending_job_timestamp_seconds") == {
            "": created_at.timestamp()
        }
        assert _samples(waiting, "tfgang_controller_jobs") == {'{condition="Created"}': 1.0}

        (pod,) = await admit_and_wait_for_pods(cluster, "waits", 1)
        await cluster.run_pods([pod])
        await wait_for_state(cluster, "waits", "Running")

        async def running_page() -> str | None:
            text = await page()
            counted = _samples(text, "tfgang_controller_jobs")
            return text if counted == {'{condition="Running"}': 1.0} else None

        running = await eventually(running_page, what="the job counted as Running")
        assert _samples(running, "tfgang_controller_oldest_pending_job_timestamp_seconds") == {}
