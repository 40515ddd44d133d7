"""The chart renderer the sandbox uses (``sandbox.chart``), for the chart's tests."""

from __future__ import annotations

from sandbox.chart import (
    ChartRenderError,
    Manifest,
    chart_crds,
    chart_dir,
    find_object,
    find_objects,
    is_test_hook,
    load_chart,
    render_chart,
    render_manifests,
)

CHART_DIR = chart_dir()

__all__ = [
    "CHART_DIR",
    "ChartRenderError",
    "Manifest",
    "chart_crds",
    "find_object",
    "find_objects",
    "is_test_hook",
    "load_chart",
    "render_chart",
    "render_manifests",
]
