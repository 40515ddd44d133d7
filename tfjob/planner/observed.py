"""What the controller observed for one job, and how its pods and services are sorted by replica.

Pods are sorted into slices by their ``replica-type`` and ``replica-index`` labels, as
upstream v1.9 does. An index holding more than one pod is left alone: none of them is counted and nothing is
created there, so the planner never makes a second pod for an index. Pods owned by another
controller are ignored, as upstream's ownership filter does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeobjects.meta import Meta
from kubeobjects.pods import PodPhase
from tfjob.constants import API_VERSION, KIND, LABEL_REPLICA_TYPE
from tfjob.facts import JobFacts
from tfjob.naming import replica_index
from tfjob.wire import Pod, PodGroup, Service, TFJob


@dataclass(frozen=True)
class Observed:
    """One job and its children as the controller's caches hold them right now."""

    job: TFJob  # as stored (raw, un-defaulted); the planner defaults it itself
    pods: Sequence[Pod] = ()  # pods labelled with the job's selector, as listed
    services: Sequence[Service] = ()
    podgroup: PodGroup | None = None  # the job's PodGroup, if it exists
    priority_values: Mapping[str, int] = field(default_factory=dict)  # PriorityClass name -> value
    # Volcano's Unschedulable events about the job's PodGroup (why it is not admitted yet)
    podgroup_events: Sequence[Mapping[str, Any]] = ()
    # ``read_facts(job)`` when the caller already has it (``FactsMemo``); None: the planner reads it
    facts: JobFacts | None = None


def pod_phase(pod: Mapping[str, Any]) -> str:
    status = pod.get("status")
    phase = status.get("phase") if isinstance(status, Mapping) else None
    return phase if isinstance(phase, str) and phase else PodPhase.PENDING


def container_statuses(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The pod's init and app container statuses, in that order."""
    status = pod.get("status")
    if not isinstance(status, Mapping):
        return []
    found: list[Mapping[str, Any]] = []
    for key in ("initContainerStatuses", "containerStatuses"):
        entries = status.get(key)
        if isinstance(entries, list):
            found.extend(entry for entry in entries if isinstance(entry, Mapping))
    return found


def restart_count(pod: Mapping[str, Any]) -> int:
    """The in-place restarts of all the pod's containers and init containers."""
    total = 0
    for entry in container_statuses(pod):
        count = entry.get("restartCount")
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            total += count
    return total


def owned_by(obj: Mapping[str, Any], facts: JobFacts) -> bool:
    """True when ``obj``'s controller owner reference names this job (by uid when both have one)."""
    reference = Meta(obj).controller
    if reference is None or reference.get("kind") != KIND or reference.get("apiVersion") != API_VERSION:
        return False
    if facts.uid and reference.get("uid"):
        return bool(reference.get("uid") == facts.uid)
    return bool(reference.get("name") == facts.name)


@dataclass(frozen=True)
class Children:
    """The job's own pods, services and PodGroup (gang scheduling off: None), as the planner acts on them."""

    pods: Sequence[Mapping[str, Any]]
    services: Sequence[Mapping[str, Any]]
    podgroup: PodGroup | None


@dataclass(frozen=True)
class ReplicaSlices:
    """The objects of one replica type by index; ``size`` is max(highest index + 1, replicas)."""

    rtype: str
    replicas: int
    by_index: Mapping[int, tuple[Mapping[str, Any], ...]]

    @property
    def size(self) -> int:
        return max([self.replicas, *(index + 1 for index in self.by_index)])

    def at(self, index: int) -> tuple[Mapping[str, Any], ...]:
        return self.by_index.get(index, ())

    def single(self, index: int) -> Mapping[str, Any] | None:
        found = self.at(index)
        return found[0] if len(found) == 1 else None

    def duplicated_indices(self) -> list[int]:
        return sorted(index for index, found in self.by_index.items() if len(found) > 1)


def slice_by_replica(
    facts: JobFacts, objects: Iterable[Mapping[str, Any]], rtype: str, replicas: int
) -> ReplicaSlices:
    """The objects of type ``rtype`` by replica index; objects without a usable index are skipped."""
    by_index: dict[int, list[Mapping[str, Any]]] = {}
    for obj in objects:
        type_label = Meta(obj).label(LABEL_REPLICA_TYPE)
        found = facts.replica_for_label(type_label) if type_label is not None else None
        if found is None or found.rtype != rtype:
            continue
        index = replica_index(obj)
        if index is None:
            continue
        by_index.setdefault(index, []).append(obj)
    return ReplicaSlices(rtype, replicas, {index: tuple(found) for index, found in by_index.items()})
