"""Every metric the chart's dashboard panels and alert rules read is one the components really
export: read from the ``/metrics`` of a running webhook and controller, never from a hand list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.chart.monitoring import dashboard_expressions, metric_names, rule_expressions

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
