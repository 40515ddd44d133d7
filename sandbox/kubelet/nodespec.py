"""The ``--nodes`` flag: ``las1:cpu=8,memory=32Gi[,pods=110];las2:...`` -> node specs.

A node without a resource gets the default for it (8 cpu, 32Gi memory, 110 pods), so ``las1``
alone is a valid spec. Quantities are checked here, so a typo fails at start with a clear message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kubeobjects import names
from kubeobjects.quantity import QuantityError, parse_milli

DEFAULT_CAPACITY: Final[Mapping[str, str]] = {"cpu": "8", "memory": "32Gi", "pods": "110"}


class NodeSpecError(ValueError):
    """A ``--nodes`` value that cannot describe nodes."""


@dataclass(frozen=True)
class NodeSpec:
    name: str
    capacity: Mapping[str, str]


def _parse_one(part: str) -> NodeSpec:
    name, _, resources = part.partition(":")
    name = name.strip()
    if not name or names.dns1123_subdomain_errors(name):
        raise NodeSpecError(f"invalid node name {name!r}: must be a lower-case DNS subdomain")
    capacity = dict(DEFAULT_CAPACITY)
    for item in filter(None, (r.strip() for r in resources.split(","))):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise NodeSpecError(f"node {name}: expected resource=quantity, got {item!r}")
        if names.qualified_name_errors(key):
            raise NodeSpecError(f"node {name}: invalid resource name {key!r}")
        try:
            parse_milli(value)
        except QuantityError as error:
            raise NodeSpecError(f"node {name}: {key}: {error}") from error
        capacity[key] = value
    return NodeSpec(name, capacity)


def parse_nodes(text: str) -> list[NodeSpec]:
    """Parse the whole flag; node names must be unique."""
    specs = [_parse_one(part) for part in text.split(";") if part.strip()]
    if not specs:
        raise NodeSpecError("no nodes given: expected e.g. las1:cpu=8,memory=32Gi")
    node_names = [spec.name for spec in specs]
    duplicates = sorted({n for n in node_names if node_names.count(n) > 1})
    if duplicates:
        raise NodeSpecError(f"node names must be unique: {', '.join(duplicates)}")
    return specs
