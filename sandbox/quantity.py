"""Kubernetes resource quantities ("500m", "1", "100Mi", "1e3") as exact integer milli-units.

Working in milli-units keeps cpu ("250m") and memory ("1Gi") in one integer type, so resource
arithmetic never rounds. A quantity that is not whole milli-units rounds up, as Kubernetes does.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Final

_SUFFIXES: Final[dict[str, Decimal]] = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY: Final = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$")


class QuantityError(ValueError):
    """A resource quantity that Kubernetes would reject."""


def parse_milli(value: object) -> int:
    """Return `value` (a quantity string or a JSON number) in milli-units, rounded up."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f"quantity must be a string or a number, not {value!r}")
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if match is None:
        raise QuantityError(f"quantities must match the regular expression of Kubernetes: {text!r}")
    number_text, suffix = match.groups()
    if "e" in number_text.lower() and suffix:
        raise QuantityError(f"a quantity cannot have both an exponent and a suffix: {text!r}")
    try:
        number = Decimal(number_text)
    except InvalidOperation as error:
        raise QuantityError(f"not a number: {text!r}") from error
    if number < 0:
        raise QuantityError(f"resource quantities must not be negative: {text!r}")
    milli = (number * _SUFFIXES[suffix] * 1000).to_integral_value(rounding=ROUND_CEILING)
    return int(milli)


def format_milli(name: str, milli: int) -> str:
    """Render milli-units readably: cpu as cores or millicores, everything else as whole units."""
    if milli % 1000 == 0:
        return str(milli // 1000)
    if name == "cpu":
        return f"{milli}m"
    return str(-(-milli // 1000))
