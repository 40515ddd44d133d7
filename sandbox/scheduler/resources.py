"""Resource lists in milli-units: what a pod asks for and what a node still has.

A pod's demand follows the scheduler's rule: per container its requests, falling back to its
limits for a resource that has no request (the API server defaults requests to limits; a
sandbox object may not be defaulted), the larger of that sum and any single init container, plus
the pod overhead, plus one ``pods`` slot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from kubeobjects.pods import PodPhase
from kubeobjects.quantity import QuantityError, format_milli, parse_milli

Resources = Mapping[str, int]
"""Resource name -> amount in milli-units (cpu "1" is 1000, memory "1Ki" is 1024000)."""

PODS: Final = "pods"
ONE_POD: Final = 1000


def parse_resources(raw: object) -> dict[str, int]:
    """Parse a wire resource list (``{"cpu": "1", "memory": "100Mi"}``); a missing list is empty."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise QuantityError(f"a resource list must be a mapping, not {raw!r}")
    return {str(name): parse_milli(value) for name, value in raw.items()}


def add(*lists: Resources) -> dict[str, int]:
    total: dict[str, int] = {}
    for resources in lists:
        for name, amount in resources.items():
            total[name] = total.get(name, 0) + amount
    return total


def subtract(minuend: Resources, subtrahend: Resources) -> dict[str, int]:
    """``minuend - subtrahend`` per resource of either list (may go negative when overcommitted)."""
    names = set(minuend) | set(subtrahend)
    return {name: minuend.get(name, 0) - subtrahend.get(name, 0) for name in names}


def scale(resources: Resources, factor: float) -> dict[str, int]:
    return {name: int(amount * factor) for name, amount in resources.items()}


def insufficient(request: Resources, available: Resources) -> list[str]:
    """Names of the resources in ``request`` (non-zero) that ``available`` cannot cover, sorted."""
    return sorted(name for name, amount in request.items() if amount > 0 and amount > available.get(name, 0))


def describe(resources: Resources) -> str:
    return ", ".join(f"{name}={format_milli(name, amount)}" for name, amount in sorted(resources.items()))


def _container_demand(container: Mapping[str, Any]) -> dict[str, int]:
    spec = container.get("resources") or {}
    demand = parse_resources(spec.get("limits"))
    demand.update(parse_resources(spec.get("requests")))
    return demand


def _element_max(lists: Iterable[Resources]) -> dict[str, int]:
    result: dict[str, int] = {}
    for resources in lists:
        for name, amount in resources.items():
            result[name] = max(result.get(name, 0), amount)
    return result


def pod_demand(pod: Mapping[str, Any]) -> dict[str, int]:
    """What ``pod`` occupies on a node, in milli-units, including one ``pods`` slot."""
    spec = pod.get("spec") or {}
    containers = add(*(_container_demand(c) for c in spec.get("containers") or []))
    init = _element_max(_container_demand(c) for c in spec.get("initContainers") or [])
    demand = add(_element_max([containers, init]), parse_resources(spec.get("overhead")))
    demand[PODS] = ONE_POD
    return demand


def is_terminal(pod: Mapping[str, Any]) -> bool:
    """Succeeded and Failed pods hold no resources on their node any more."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in (PodPhase.SUCCEEDED, PodPhase.FAILED)


def node_allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    status = node.get("status") or {}
    return parse_resources(status.get("allocatable") or status.get("capacity"))
