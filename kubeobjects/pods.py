"""The pod lifecycle's vocabulary (``core/v1``), shared by the planner that reads pods and the
sandbox's node agent that writes them."""

from __future__ import annotations

from enum import StrEnum


class PodPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"
