"""What one scheduling session decided: bindings, status writes and events, as plain values.

The session computes these without I/O; the scheduler loop carries them out against the API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, NotRequired, TypedDict


class PodGroupCondition(TypedDict):
    type: str
    status: str
    transitionID: str
    lastTransitionTime: str
    reason: str
    message: str


class PodGroupStatus(TypedDict):
    phase: str
    conditions: NotRequired[list[PodGroupCondition]]
    running: NotRequired[int]
    succeeded: NotRequired[int]
    failed: NotRequired[int]


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
class EventNote:
    """An event to record about a Pod or a PodGroup."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    type: str
    reason: str
    message: str
    source: str = GANG


@dataclass(frozen=True)
class SessionResult:
    binds: tuple[Bind, ...] = ()
    pod_conditions: tuple[PodUnschedulable, ...] = ()
    podgroup_writes: tuple[PodGroupStatusWrite, ...] = ()
    events: tuple[EventNote, ...] = field(default=())
