"""What one scheduling session decided: bindings, status writes and events, as plain values.

The session computes these without I/O; the scheduler loop carries them out against the API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, TypedDict

from kube.events import EventKey
from kubeobjects.volcano import PodGroupCondition as PodGroupCondition
from kubeobjects.volcano import PodGroupStatus as PodGroupStatus


class PodCondition(TypedDict):
    type: str
    status: str
    lastProbeTime: None
    lastTransitionTime: str
    reason: str
    message: str


GANG: Final = "volcano"
PLAIN: Final = "default-scheduler"


@dataclass(frozen=True)
class Bind:
    namespace: str
    name: str
    uid: str
    node: str
    source: str = GANG
    """Which scheduler decided: ``volcano`` or ``default-scheduler`` (the events' source)."""


@dataclass(frozen=True)
class PodUnschedulable:
    """Set the pod's ``PodScheduled`` condition to False with this reason and message."""

    namespace: str
    name: str
    uid: str
    condition: PodCondition


@dataclass(frozen=True)
class PodGroupStatusWrite:
    namespace: str
    name: str
    status: PodGroupStatus


@dataclass(frozen=True)
class EventNote(EventKey):
    """An event to record about a Pod or a PodGroup; ``source`` names the recording component."""

    source: str = GANG


@dataclass(frozen=True)
class SessionResult:
    binds: tuple[Bind, ...] = ()
    pod_conditions: tuple[PodUnschedulable, ...] = ()
    podgroup_writes: tuple[PodGroupStatusWrite, ...] = ()
    events: tuple[EventNote, ...] = field(default=())
