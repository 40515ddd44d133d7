"""Kubernetes quantities: the grammar, the canonical spelling, and sums of resource maps."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeobjects.quantity import QuantityError, format_quantity, parse_quantity, sum_resources


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", Decimal(1)),
        (5, Decimal(5)),
        (0.5, Decimal("0.5")),
        ("500m", Decimal("0.5")),
        ("100u", Decimal("0.0001")),
        ("3n", Decimal("3e-9")),
        ("2k", Decimal(2000)),
        ("1M", Decimal(10**6)),
        ("1G", Decimal(10**9)),
        ("1T", Decimal(10**12)),
        ("1P", Decimal(10**15)),
        ("1E", Decimal(10**18)),
        ("1Ki", Decimal(1024)),
        ("100Mi", Decimal(100 * 1024**2)),
        ("1.5Gi", Decimal(3 * 1024**3 // 2)),
        ("1Ti", Decimal(1024**4)),
        ("1Pi", Decimal(1024**5)),
        ("1Ei", Decimal(1024**6)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("2.5e-3", Decimal("0.0025")),
        ("-1", Decimal(-1)),
        ("+.5", Decimal("0.5")),
        ("1.", Decimal(1)),
    ],
)
def test_parse_quantity_follows_the_kubernetes_grammar(text: str | int | float, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "bad", ["", "abc", "1Kb", "1 Gi", "1.2.3", "Gi", "1ki", "--1", "1e", " 1", "1\n", True, None, [1]]
)
def test_parse_quantity_rejects_bad_input_with_a_clear_error(bad: object) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(bad)  # type: ignore[arg-type]


def test_parse_quantity_rounds_below_nano_up() -> None:
    assert parse_quantity("0.1n") == Decimal("1e-9")


@pytest.mark.parametrize(
    ("value", "binary", "expected"),
    [
        (Decimal(5), False, "5"),
        (Decimal("0.5"), False, "500m"),
        (Decimal("1.5"), False, "1500m"),
        (Decimal(1500), False, "1500"),
        (Decimal(2000), False, "2k"),
        (Decimal(0), True, "0"),
        (Decimal("0.0001"), False, "100u"),
        (Decimal(8 * 1024**3), True, "8Gi"),
        (Decimal(400 * 1024**2), True, "400Mi"),
        (Decimal(1536 * 1024**2), True, "1536Mi"),
        (Decimal(512), True, "512"),
        (Decimal(1000), True, "1k"),
        (Decimal("0.5"), True, "500m"),
        (Decimal(-2048), True, "-2Ki"),
        (Decimal(10**21), False, "1000E"),
    ],
)
def test_format_quantity_is_canonical(value: Decimal, binary: bool, expected: str) -> None:
    assert format_quantity(value, binary) == expected


@given(st.integers(min_value=0, max_value=2**62), st.booleans())
def test_format_then_parse_round_trips_integers(value: int, binary: bool) -> None:
    assert parse_quantity(format_quantity(Decimal(value), binary)) == value


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_format_then_parse_round_trips_milli_values(milli: int) -> None:
    value = Decimal(milli) / 1000
    assert parse_quantity(format_quantity(value, binary=False)) == value


def test_sum_resources_scenario_49_cpu_and_memory() -> None:
    ps: dict[str, str | int] = {"cpu": "1"}
    worker: dict[str, str | int] = {"cpu": 2, "memory": "4Gi"}
    assert sum_resources([ps, worker, worker]) == {"cpu": "5", "memory": "8Gi"}


def test_sum_resources_prints_memory_decimal_when_an_addend_was_decimal() -> None:
    assert sum_resources([{"memory": "1Gi"}, {"memory": "1G"}]) == {"memory": "2073741824"}


def test_sum_resources_binary_storage_and_hugepages_but_decimal_cpu() -> None:
    summed = sum_resources(
        [
            {"cpu": "1Ki", "ephemeral-storage": "1Gi", "hugepages-2Mi": "2Mi"},
            {"cpu": "500m", "ephemeral-storage": "1Gi", "hugepages-2Mi": "2Mi"},
        ]
    )
    assert summed == {"cpu": "1024500m", "ephemeral-storage": "2Gi", "hugepages-2Mi": "4Mi"}


def test_sum_resources_names_the_resource_of_a_bad_quantity() -> None:
    with pytest.raises(ValueError, match="'memory'"):
        sum_resources([{"memory": "lots"}])


def test_long_quantities_are_parsed_but_never_remembered() -> None:
    from kubeobjects.quantity import _parse_remembered

    _parse_remembered.cache_clear()
    assert parse_quantity("500m") == parse_quantity("500m") == Decimal("0.5")
    long_value = "1." + "0" * 5000
    assert parse_quantity(long_value) == Decimal(1)
    assert _parse_remembered.cache_info().currsize == 1, "only the short quantity is kept"
    with pytest.raises(QuantityError):
        parse_quantity("12 cores")
