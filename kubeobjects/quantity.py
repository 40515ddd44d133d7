"""Kubernetes resource quantities, one grammar (apimachinery's): parse, format, sum, milli-units.

PodGroup ``minResources`` is the sum of container requests, so the sum must come out in the same
canonical spelling the API server uses (``5``, ``500m``, ``8Gi``), or every comparison with a
stored PodGroup would see a change that is not there. Schedulers and node agents count in exact
integer milli-units instead, so cpu and memory share one type and arithmetic never rounds.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from decimal import ROUND_CEILING, Decimal, InvalidOperation


class QuantityError(ValueError):
    """A resource quantity that Kubernetes would reject."""


_BINARY_SUFFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX_BY_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIX_BY_POWER = {power: suffix for suffix, power in _BINARY_SUFFIXES.items()}

_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_QUANTITY = re.compile(
    rf"^(?P<number>{_NUMBER})"
    rf"(?P<suffix>[KMGTPE]i|[numkMGTPE]|[eE](?P<exponent>[+-]?[0-9]+))?$"
)
# Quantities carry at most nano precision; finer values round up, as the API server does.
_NANO = Decimal("1e-9")


def parse_quantity(value: str | int | float) -> Decimal:
    """The numeric value of a Kubernetes quantity (``"500m"`` -> 0.5, ``"1Gi"`` -> 1073741824)."""
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a number or a string, not a boolean: {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"quantity must be finite: {value!r}")
        return _round_to_nano(Decimal(repr(value)))
    if not isinstance(value, str):
        raise QuantityError(f"quantity must be a number or a string, not {type(value).__name__}: {value!r}")
    if len(value) <= _REMEMBERED_LENGTH:
        return _parse_remembered(value)
    return _parse_text(value)


# A job's templates repeat a handful of quantities ("1", "500m", "4Gi") on every reconcile pass;
# the values of the short ones are remembered (Decimals are immutable), the long ones, rare and
# possibly hostile, are parsed each time and never kept.
_REMEMBERED_LENGTH = 64


@functools.lru_cache(maxsize=1024)
def _parse_remembered(value: str) -> Decimal:
    return _parse_text(value)


def _parse_text(value: str) -> Decimal:
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise QuantityError(
            f"quantity {value!r} does not match the Kubernetes quantity grammar "
            "(a number with an optional suffix n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei "
            "or an exponent such as e3)"
        )
    try:
        number = Decimal(match["number"])
        suffix = match["suffix"] or ""
        if match["exponent"] is not None:
            number = number.scaleb(int(match["exponent"]))
        elif suffix in _BINARY_SUFFIXES:
            number = number * (Decimal(1024) ** _BINARY_SUFFIXES[suffix])
        else:
            number = number.scaleb(_DECIMAL_SUFFIXES[suffix])
    except (InvalidOperation, OverflowError) as error:
        raise QuantityError(f"quantity {value!r} is out of range") from error
    return _round_to_nano(number)


def parse_milli(value: object) -> int:
    """``value`` (a quantity string or a JSON number) in milli-units, rounded up; never negative.

    Surrounding whitespace is ignored, as when apimachinery unmarshals a quantity from JSON.
    """
    if isinstance(value, str):
        value = value.strip()
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f"quantity must be a string or a number, not {value!r}")
    number = parse_quantity(value)
    if number < 0:
        raise QuantityError(f"resource quantities must not be negative: {value!r}")
    return int((number * 1000).to_integral_value(rounding=ROUND_CEILING))


def format_milli(name: str, milli: int) -> str:
    """Milli-units readably: cpu as cores or millicores, everything else as whole units (rounded up)."""
    if milli % 1000 == 0:
        return str(milli // 1000)
    if name == "cpu":
        return f"{milli}m"
    return str(-(-milli // 1000))


def is_binary_quantity(value: str | int | float) -> bool:
    """True when the quantity is written with a binary suffix (``Ki`` ... ``Ei``)."""
    return isinstance(value, str) and value[-2:] in _BINARY_SUFFIXES


def format_quantity(value: Decimal, binary: bool) -> str:
    """The canonical spelling of ``value``, the way the API server prints a quantity.

    Binary form uses the largest ``Ki``..``Ei`` suffix that divides the value exactly; values
    below 1024 in magnitude, and fractions, fall back to the decimal form, as upstream does.
    """
    value = _round_to_nano(value)
    if value == 0:
        return "0"
    if binary and value == value.to_integral_value() and abs(value) >= 1024:
        return _format_binary(int(value))
    return _format_decimal(value)


def sum_resources(items: Iterable[Mapping[str, str | int | float]]) -> dict[str, str]:
    """Add resource maps key by key; keys keep their first-seen order.

    Memory-like resources (``memory``, ``*-storage``, ``hugepages-*``) are printed in binary form
    when every addend was written in binary form; everything else is printed in decimal form.
    """
    totals: dict[str, Decimal] = {}
    all_binary: dict[str, bool] = {}
    for resources in items:
        for name, quantity in resources.items():
            try:
                parsed = parse_quantity(quantity)
            except ValueError as error:
                raise ValueError(f"resource {name!r}: {error}") from error
            totals[name] = totals.get(name, Decimal(0)) + parsed
            all_binary[name] = all_binary.get(name, True) and is_binary_quantity(quantity)
    return {
        name: format_quantity(total, binary=_is_memory_like(name) and all_binary[name])
        for name, total in totals.items()
    }


def _is_memory_like(resource_name: str) -> bool:
    return (
        resource_name == "memory"
        or resource_name.endswith("-storage")
        or resource_name.startswith("hugepages-")
    )


def _round_to_nano(value: Decimal) -> Decimal:
    if value == value.to_integral_value():
        return value
    return value.quantize(_NANO, rounding=ROUND_CEILING)


def _format_binary(value: int) -> str:
    power = 0
    while power < max(_BINARY_SUFFIX_BY_POWER) and value % 1024 == 0:
        value //= 1024
        power += 1
    return f"{value}{_BINARY_SUFFIX_BY_POWER.get(power, '')}"


def _format_decimal(value: Decimal) -> str:
    exponent = 0
    # Scale fractions up to milli, micro or nano until they are whole.
    while value != value.to_integral_value() and exponent > -9:
        value = value.scaleb(3)
        exponent -= 3
    mantissa = int(value)
    while exponent < 18 and mantissa != 0 and mantissa % 1000 == 0:
        mantissa //= 1000
        exponent += 3
    return f"{mantissa}{_DECIMAL_SUFFIX_BY_EXPONENT[exponent]}"
