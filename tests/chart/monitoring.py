"""The chart's monitoring objects as tests read them: the rendered PrometheusRule and Grafana
dashboard, every PromQL expression they hold, the metric names those expressions read, and promtool."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from .render import CHART_DIR, find_object, render_chart

REPO = CHART_DIR.parents[1]
MONITORING_ON = {"metrics": {"grafanaDashboard": {"enabled": True}, "prometheusRule": {"enabled": True}}}

# PromQL words that look like metric names: aggregation and binary keywords, literals.
_KEYWORDS = frozenset(
    {
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "offset",
        "and",
        "or",
        "unless",
        "inf",
        "nan",
        "le",
    }
)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENTIFIER = re.compile(r"(?<![\w:.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (functions, keywords and labels left out)."""
    text = _STRING.sub('""', expr)
    text = _MATCHERS.sub("", text)
    text = _RANGE.sub("", text)
    text = _GROUPING.sub("", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        name, call = match.group(1), match.group(2)
        if call or name in _KEYWORDS:
            continue
        names.add(name)
    return names


def rendered_rule(values: dict[str, Any] | None = None) -> dict[str, Any]:
    return find_object(render_chart(values if values is not None else MONITORING_ON), "PrometheusRule")


def rendered_dashboard(values: dict[str, Any] | None = None) -> dict[str, Any]:
    config_map = find_object(
        render_chart(values if values is not None else MONITORING_ON), "ConfigMap", "tfgang-dashboard"
    )
    dashboard: dict[str, Any] = json.loads(config_map["data"]["tfgang.json"])
    return dashboard


def rule_expressions() -> dict[str, str]:
    """Alert name -> expression, over every group of the rendered rule."""
    return {
        rule["alert"]: rule["expr"] for group in rendered_rule()["spec"]["groups"] for rule in group["rules"]
    }


def dashboard_expressions() -> dict[str, str]:
    """ "<panel title> #<refId>" -> expression, over every panel of the rendered dashboard."""
    return {
        f"{panel['title']} #{target['refId']}": target["expr"]
        for panel in rendered_dashboard()["panels"]
        for target in panel.get("targets", ())
    }


def promtool() -> str:
    found = shutil.which("promtool") or str(REPO / ".tools" / "bin" / "promtool")
    if not Path(found).is_file():
        pytest.fail("promtool not found: run scripts/setup-promtool (CI's .ci/run does)")
    return found
