from __future__ import annotations

import pytest

from kubeobjects.quantity import QuantityError, format_milli, parse_milli
from sandbox.scheduler.resources import pod_demand

from .factories import pod


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("1", 1000),
        ("500m", 500),
        ("0.5", 500),
        ("100Mi", 100 * 2**20 * 1000),
        ("1k", 10**6),
        ("1e3", 10**6),
        (2, 2000),
        ("1n", 1),
    ],
)
def test_parse_milli(text: object, milli: int) -> None:
    assert parse_milli(text) == milli


@pytest.mark.parametrize("text", ["", "abc", "1Xi", "-1", "1e3Mi", None, True])
def test_bad_quantities_are_rejected_clearly(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_milli(text)


def test_format_milli() -> None:
    assert (format_milli("cpu", 1500), format_milli("cpu", 2000), format_milli("memory", 1500)) == (
        "1500m",
        "2",
        "2",
    )


def test_pod_demand_uses_requests_then_limits_and_counts_a_pod_slot() -> None:
    p = pod("p", cpu="1", memory="1Gi")
    p["spec"]["containers"].append(
        {"name": "side", "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "2"}}}
    )
    p["spec"]["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "3"}}}]

    assert pod_demand(p) == {"cpu": 3000, "memory": 2**30 * 1000, "pods": 1000}
