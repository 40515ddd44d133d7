"""The pod worker's vocabulary: its inbox messages and its per-container bookkeeping."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sandbox.kubelet.backoff import BackoffEntry
from sandbox.kubelet.containers import ContainerRecord
from sandbox.kubelet.process import ContainerProcess


@dataclass(frozen=True)
class ContainerMessage:
    """A message about one instance of a container: ``generation`` tells stale instances apart."""

    container: str
    generation: int


@dataclass(frozen=True)
class Exited(ContainerMessage):
    """The container's main process ended."""

    returncode: int


@dataclass(frozen=True)
class ShowBackoff(ContainerMessage):
    """Time to report the crash-loop wait."""


@dataclass(frozen=True)
class RestartDue(ContainerMessage):
    """The back-off has passed (or a config error is to be retried): start the container."""


@dataclass(frozen=True)
class PodChanged:
    pass


@dataclass(frozen=True)
class PodRemoved:
    pass


Message = Exited | ShowBackoff | RestartDue | PodChanged | PodRemoved


@dataclass
class ContainerSlot:
    """Mutable, owned by one worker: the container's record, its process and its timers."""

    spec: Mapping[str, Any]
    record: ContainerRecord
    process: ContainerProcess | None = None
    generation: int = 0
    backoff: BackoffEntry | None = None
    finished_mono: float = 0.0
    restart_pending: bool = False
    timers: list[asyncio.TimerHandle] = field(default_factory=list)

    def cancel_timers(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()


def earlier_restarts(pod: Mapping[str, Any]) -> dict[str, int]:
    """Restart counts of containers that a previous run of the agent had already started."""
    counts: dict[str, int] = {}
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        state = status.get("state") or {}
        if "running" in state or "terminated" in state or status.get("lastState"):
            counts[str(status.get("name", ""))] = int(status.get("restartCount") or 0)
    return counts
