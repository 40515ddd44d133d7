"""Pending -> Inqueue: Volcano's enqueue action with the overcommit and proportion checks.

A PodGroup without ``minResources`` is admitted at once. Otherwise, in this order (the first
rejection wins, as Volcano's plugin tiers do):

- overcommit: reserved minResources of admitted gangs + this gang's <= allocatable x factor - used;
- proportion: the queue must be Open, and this gang + the queue's allocated + reserved resources
  <= the queue's capability (capped by the cluster's total).

Only the resource names present in ``minResources`` are compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from kubeobjects.volcano import PodGroupPhase
from sandbox.scheduler.resources import add, insufficient, scale, subtract
from sandbox.scheduler.snapshot import OCCUPYING, JobInfo, NodeInfo, QueueInfo

RESERVING_PHASES: Final = frozenset({PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN})
QUEUE_OPEN: Final = "Open"


@dataclass(frozen=True)
class EnqueueVerdict:
    admitted: bool
    message: str = ""
    """Volcano's Normal ``Unschedulable`` event text when rejected."""


def job_allocated(job: JobInfo) -> dict[str, int]:
    return add(*(task.demand for task in job.tasks if task.status in OCCUPYING))


def job_reservation(job: JobInfo) -> dict[str, int]:
    """What an admitted gang still holds back: its minResources not yet covered by bound pods."""
    if job.min_resources is None or job.phase not in RESERVING_PHASES:
        return {}
    allocated = job_allocated(job)
    return {name: max(0, amount - allocated.get(name, 0)) for name, amount in job.min_resources.items()}


def _only(names: Iterable[str], resources: Mapping[str, int]) -> dict[str, int]:
    return {name: resources.get(name, 0) for name in names}


class EnqueueAccount:
    """Cluster- and queue-wide totals that change as gangs are admitted during one session."""

    def __init__(self, nodes: Sequence[NodeInfo], jobs: Sequence[JobInfo], overcommit_factor: float) -> None:
        ready = [node for node in nodes if node.ready]
        self.total = add(*(node.allocatable for node in ready))
        self.used = add(*(node.used for node in nodes))
        self.overcommit_factor = overcommit_factor
        self.reserved = add(*(job_reservation(job) for job in jobs))
        self.queue_allocated: dict[str, dict[str, int]] = {}
        self.queue_reserved: dict[str, dict[str, int]] = {}
        for job in jobs:
            self.queue_allocated[job.queue] = add(self.queue_allocated.get(job.queue, {}), job_allocated(job))
            self.queue_reserved[job.queue] = add(self.queue_reserved.get(job.queue, {}), job_reservation(job))

    def judge(self, job: JobInfo, queue: QueueInfo) -> EnqueueVerdict:
        if queue.state != QUEUE_OPEN:
            return EnqueueVerdict(False, f"queue {queue.name} is not open (state {queue.state or 'unset'})")
        if job.min_resources is None:
            return EnqueueVerdict(True)
        wanted = dict(job.min_resources)
        idle = subtract(scale(self.total, self.overcommit_factor), self.used)
        overused = insufficient(add(_only(wanted, self.reserved), wanted), _only(wanted, idle))
        if overused:
            detail = ", ".join(f"overused {name}" for name in overused)
            return EnqueueVerdict(False, f"resource in cluster is overused: {detail}")
        capability = dict(self.total)
        if queue.capability is not None:
            for name, amount in queue.capability.items():
                capability[name] = min(amount, capability.get(name, amount))
        demand = add(wanted, self.queue_allocated.get(job.queue, {}), self.queue_reserved.get(job.queue, {}))
        short = insufficient(_only(wanted, demand), capability)
        if short:
            detail = ", ".join(f"insufficient {name}" for name in short)
            return EnqueueVerdict(False, f"queue resource quota insufficient: {detail}")
        return EnqueueVerdict(True)

    def admit(self, job: JobInfo) -> None:
        if job.min_resources is None:
            return
        self.reserved = add(self.reserved, job.min_resources)
        self.queue_reserved[job.queue] = add(self.queue_reserved.get(job.queue, {}), job.min_resources)
