"""The chart's Grafana dashboard and PrometheusRule alerts: off by default, checked by promtool
(``check rules`` on the rendered rules, ``test rules`` on the alerts' behaviour), and shaped as
Grafana's sidecar and prometheus-operator expect. That every metric they name is one the components
export is ``tests/integration/test_monitoring_names_exported_metrics.py`` (it needs the processes)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from .monitoring import CHART_DIR, MONITORING_ON, metric_names, promtool, rendered_dashboard, rendered_rule
from .render import find_objects, render_chart

ALERTS = {
    "TFGangWebhookErrors",
    "TFGangWebhookSlow",
    "TFGangWebhookCertificateExpiresSoon",
    "TFGangControllerNotLeading",
    "TFGangJobStuckPending",
    "TFGangReconcileErrors",
}


def _rules_file(tmp_path: Path, rule: dict[str, Any]) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    return path


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool(), *args], capture_output=True, text=True, timeout=60, check=False)


def test_both_are_off_by_default() -> None:
    objects = render_chart()
    assert not find_objects(objects, "PrometheusRule")
    assert not [
        o for o in find_objects(objects, "ConfigMap") if "grafana_dashboard" in o["metadata"]["labels"]
    ]


def test_promtool_accepts_the_rendered_rules(tmp_path: Path) -> None:
    rule = rendered_rule()
    assert (rule["apiVersion"], rule["metadata"]["namespace"]) == ("monitoring.coreos.com/v1", "tfgang")
    assert {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]} == ALERTS
    result = _promtool("check", "rules", str(_rules_file(tmp_path, rule)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 6 rules found" in result.stdout


def test_promtool_does_refuse_a_broken_rule(tmp_path: Path) -> None:
    rule = rendered_rule()
    rule["spec"]["groups"][0]["rules"][0]["expr"] = "sum(rate(tfgang_webhook_requests_total[5m])"
    result = _promtool("check", "rules", str(_rules_file(tmp_path, rule)))
    assert result.returncode != 0


def test_the_thresholds_come_from_the_values(tmp_path: Path) -> None:
    values = {
        "metrics": {
            "prometheusRule": {
                "enabled": True,
                "labels": {"release": "prometheus"},
                "for": "3m",
                "rateWindow": "2m",
                "webhookLatencySeconds": 0.25,
                "certificateExpiryDays": 7,
                "jobPendingSeconds": 600,
            }
        }
    }
    rule = rendered_rule(values)
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    rules = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    assert rules["TFGangWebhookSlow"]["for"] == "3m"
    assert rules["TFGangWebhookSlow"]["expr"].endswith("> 0.25")
    assert "[2m]" in rules["TFGangWebhookSlow"]["expr"]
    assert rules["TFGangWebhookCertificateExpiresSoon"]["expr"].endswith(f"< {7 * 86400}")
    assert rules["TFGangJobStuckPending"]["expr"].endswith("> 600")
    assert _promtool("check", "rules", str(_rules_file(tmp_path, rule))).returncode == 0


# The alerts' behaviour, by promtool's own rule tests over synthetic series (alert_rule_tests.yaml).
# Series carry the release namespace, as the ServiceMonitor's targets do.
RULE_TESTS = Path(__file__).with_name("alert_rule_tests.yaml")


def test_the_alerts_fire_when_they_should_and_not_before(tmp_path: Path) -> None:
    _rules_file(tmp_path, rendered_rule())
    (tmp_path / "tests.yaml").write_text(RULE_TESTS.read_text())
    result = subprocess.run(
        [promtool(), "test", "rules", "tests.yaml"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_dashboard_configmap_is_what_grafanas_sidecar_loads() -> None:
    values = {
        "metrics": {
            "grafanaDashboard": {
                "enabled": True,
                "namespace": "monitoring",
                "annotations": {"grafana_folder": "ML"},
            }
        }
    }
    (config_map,) = [
        o
        for o in find_objects(render_chart(values), "ConfigMap")
        if o["metadata"]["name"] == "tfgang-dashboard"
    ]
    assert config_map["metadata"]["namespace"] == "monitoring"
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["metadata"]["annotations"] == {"grafana_folder": "ML"}
    # kubectl apply keeps the whole object in an annotation limited to 256 KiB.
    assert len(json.dumps(config_map)) < 200_000
    assert json.loads(config_map["data"]["tfgang.json"]) == json.loads(
        (CHART_DIR / "dashboards" / "tfgang.json").read_text()
    )


def test_the_dashboard_covers_the_webhook_and_the_controller() -> None:
    dashboard = rendered_dashboard()
    assert dashboard["uid"] == "tfgang"
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"] and all(t["expr"] for t in panel["targets"]), panel["title"]
        assert panel["gridPos"]["x"] >= 0 and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
    named = {name for panel in panels for t in panel["targets"] for name in metric_names(t["expr"])}
    # What the issue asks the dashboard to show, by the metric that shows it.
    for metric in (
        "tfgang_webhook_requests_total",  # rate
        "tfgang_webhook_request_duration_seconds_bucket",  # latency
        "tfgang_webhook_admission_decisions_total",  # denials
        "tfgang_webhook_certificate_expiry_timestamp_seconds",  # certificate expiry
        "workqueue_depth",  # queue depth
        "controller_runtime_reconcile_time_seconds_bucket",  # reconcile latency
        "tfgang_controller_jobs",  # jobs by condition
        "training_operator_jobs_restarted_total",  # restarts
        "rest_client_requests_total",  # API errors
    ):
        assert metric in named, metric
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["datasource"]


def test_metric_names_are_read_from_promql_as_promql_means_them() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (le, path) (rate(a_bucket{path="/x", b="c{d}"}[$__rate_interval])))'
        " / on (pod) group_left (node) b_total offset 5m > bool 0 or vector(0) and time() - c"
    )
    assert metric_names(expr) == {"a_bucket", "b_total", "c"}


@pytest.mark.parametrize(
    "values",
    [
        {"prometheusRule": {"enabled": True, "certificateExpiryDays": 0}},
        {"prometheusRule": {"enabled": True, "for": "soon"}},
        {"prometheusRule": {"enabled": True, "severity": "page"}},
        {"grafanaDashboard": {"enabled": True, "namespace": "Not_A_Namespace"}},
        {"grafanaDashboard": {"enabled": "yes"}},
    ],
)
def test_the_values_schema_refuses_bad_monitoring_values(values: dict[str, Any]) -> None:
    with pytest.raises(helm_python.HelmValuesError):
        render_chart({"metrics": values})


def test_everything_on_renders_both() -> None:
    objects = render_chart(MONITORING_ON)
    assert len(find_objects(objects, "PrometheusRule")) == 1
    assert [
        o["metadata"]["name"]
        for o in find_objects(objects, "ConfigMap")
        if o["metadata"]["name"].endswith("-dashboard")
    ] == ["tfgang-dashboard"]
