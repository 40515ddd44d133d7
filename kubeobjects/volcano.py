"""Volcano's PodGroup status (``scheduling.volcano.sh/v1beta1``) as typed wire shapes.

The controller reads it and the sandbox's gang scheduler writes it, so the shape is declared
once, here. Every key is optional: the API server may omit any of them.
"""

from __future__ import annotations

from typing import TypedDict


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
