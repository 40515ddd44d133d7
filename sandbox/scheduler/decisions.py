"""What one scheduling session decided: bindings, status writes and events, as plain values.

The session computes these without I/O; the scheduler loop carries them out against the API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from kube.events import EventKey
from kubeobjects.volcano import PodGroupCondition as PodGroupCondition
from kubeobjects.volcano import PodGroupStatus as PodGroupStatus
from sandbox.scheduler.snapshot import ObjectRef, SchedulerName


class PodCondition(TypedDict):
    type: str
    status: str
    lastProbeTime: None
    lastTransitionTime: str
    reason: str
    message: str


@dataclass(frozen=True)
class Bind(ObjectRef):
    """Bind this pod to ``node``."""

    node: str
    source: SchedulerName = SchedulerName.VOLCANO
    """Which scheduler decided (the events' source)."""


@dataclass(frozen=True)
class PodUnschedulable(ObjectRef):
    """Set the pod's ``PodScheduled`` condition to False with this reason and message."""

    condition: PodCondition


@dataclass(frozen=True)
class Evict(ObjectRef):
    """Evict this pod as Volcano's evictor does: ``DisruptionTarget`` (and ``Ready=False``) on its
    status, a Warning ``Evict`` event, then a graceful delete."""

    reason: str  # the pod condition's reason, e.g. PreemptionByScheduler
    message: str
    why: str  # the action that evicts it, for the event: "preempt"


@dataclass(frozen=True)
class PodGroupStatusWrite(ObjectRef):
    """Make the PodGroup's status exactly ``status``."""

    status: PodGroupStatus


@dataclass(frozen=True)
class EventNote(EventKey):
    """An event to record about a Pod or a PodGroup; ``source`` names the recording component."""

    source: SchedulerName = SchedulerName.VOLCANO

    @classmethod
    def about_pod(
        cls,
        pod: ObjectRef,
        type_: str,
        reason: str,
        message: str,
        source: SchedulerName = SchedulerName.VOLCANO,
    ) -> EventNote:
        return cls("v1", "Pod", pod.namespace, pod.name, pod.uid, type_, reason, message, source)


@dataclass(frozen=True)
class SessionResult:
    binds: tuple[Bind, ...] = ()
    pod_conditions: tuple[PodUnschedulable, ...] = ()
    podgroup_writes: tuple[PodGroupStatusWrite, ...] = ()
    events: tuple[EventNote, ...] = field(default=())
    evictions: tuple[Evict, ...] = ()
