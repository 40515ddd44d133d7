"""Node filtering (predicates) and scoring (binpack, least-allocated) for one task.

Reason strings are the ones kube-scheduler and Volcano print, so a `kubectl describe pod` reads
the same: ``0/1 nodes are unavailable: 1 Insufficient cpu.``
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from sandbox.scheduler.resources import add, insufficient
from sandbox.scheduler.snapshot import NodeInfo, TaskInfo

BINPACK_WEIGHTS: Final[Mapping[str, float]] = {"cpu": 1.0, "memory": 1.0}
NOT_READY: Final = "node(s) were not ready"
UNSCHEDULABLE: Final = "node(s) were unschedulable"
SELECTOR_MISMATCH: Final = "node(s) didn't match Pod's node affinity/selector"


@dataclass(frozen=True)
class Placement:
    node: str
    score: float


def _tolerates(tolerations: Iterable[Mapping[str, Any]], key: str, value: str, effect: str) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration.get("effect") != effect:
            continue
        operator = toleration.get("operator") or "Equal"
        if not toleration.get("key") and operator == "Exists":
            return True
        if toleration.get("key") != key:
            continue
        if operator == "Exists" or str(toleration.get("value") or "") == value:
            return True
    return False


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key = str(expression.get("key", ""))
    operator = expression.get("operator")
    values = [str(v) for v in expression.get("values") or []]
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt") and key in labels and values:
        try:
            left, right = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return left > right if operator == "Gt" else left < right
    return False


def _affinity_matches(terms: Iterable[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    terms = list(terms)
    if not terms:
        return True
    return any(
        all(_expression_matches(e, labels) for e in term.get("matchExpressions") or []) for term in terms
    )


def fit_failures(task: TaskInfo, node: NodeInfo, used: Mapping[str, int]) -> list[str]:
    """Why ``task`` cannot go to ``node`` given the resources ``used`` there; empty when it fits."""
    if not node.ready:
        return [NOT_READY]
    if node.unschedulable:
        return [UNSCHEDULABLE]
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not _tolerates(
            task.tolerations, taint.key, taint.value, taint.effect
        ):
            return [f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"]
    if any(node.labels.get(k) != v for k, v in task.node_selector.items()) or not _affinity_matches(
        task.affinity_terms, node.labels
    ):
        return [SELECTOR_MISMATCH]
    free = {name: amount - used.get(name, 0) for name, amount in node.allocatable.items()}
    reasons = []
    for name in insufficient(task.demand, free):
        reasons.append("Too many pods" if name == "pods" else f"Insufficient {name}")
    return reasons


def fit_error_message(node_count: int, reasons: Iterable[str], *, volcano: bool) -> str:
    """``0/N nodes are unavailable: 1 Insufficient cpu, 2 node(s) were not ready.``"""
    histogram = Counter(reasons)
    parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
    verb = "unavailable" if volcano else "available"
    return f"0/{node_count} nodes are {verb}: {', '.join(parts)}."


def binpack_score(task: TaskInfo, node: NodeInfo, used: Mapping[str, int]) -> float:
    """Volcano's binpack: the fuller the node would be after placing the task, the higher."""
    total_weight = 0.0
    score = 0.0
    after = add(used, task.demand)
    for name, weight in BINPACK_WEIGHTS.items():
        request = task.demand.get(name, 0)
        if request <= 0:
            continue
        allocatable = node.allocatable.get(name, 0)
        if allocatable <= 0 or after.get(name, 0) > allocatable:
            return 0.0
        total_weight += weight
        score += after.get(name, 0) / allocatable * weight
    return 0.0 if total_weight == 0 else score / total_weight * 100.0


def least_allocated_score(task: TaskInfo, node: NodeInfo, used: Mapping[str, int]) -> float:
    """kube-scheduler's default spreading score: the emptier the node stays, the higher."""
    after = add(used, task.demand)
    fractions = []
    for name in ("cpu", "memory"):
        allocatable = node.allocatable.get(name, 0)
        if allocatable > 0:
            fractions.append(max(0.0, (allocatable - after.get(name, 0)) / allocatable))
    return 0.0 if not fractions else sum(fractions) / len(fractions) * 100.0
