"""Volcano's PodGroup status (``scheduling.volcano.sh/v1beta1``) as typed wire shapes.

The controller reads it and the sandbox's gang scheduler writes it, so the shape is declared
once, here. Every key is optional: the API server may omit any of them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, TypedDict


class PodGroupPhase(StrEnum):
    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


# The phases in which Volcano has admitted the gang, so its pods may be created and bound.
ADMITTED_PHASES: Final = frozenset(
    {PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN, PodGroupPhase.COMPLETED}
)


class PodGroupCondition(TypedDict, total=False):
    type: str
    status: str
    transitionID: str
    lastTransitionTime: str
    reason: str
    message: str


class PodGroupStatus(TypedDict, total=False):
    phase: str
    conditions: list[PodGroupCondition]
    running: int
    succeeded: int
    failed: int
