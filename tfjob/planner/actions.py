"""What a reconcile pass asks the controller to do, and the events it reports about the TFJob.

Actions are carried out in plan order. The planner emits the *decision* events (conditions,
restarts, exit codes, template overrides); the events that depend on an API call's outcome
(``SuccessfulCreatePod``, ``FailedDeletePodGroup``, ...) are described here, next to the action,
through ``success_event`` / ``failure_event``, so the controller reports every action uniformly
with upstream's reasons and messages (reference §3.4, §3.5, §5.8, §7.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from tfjob.constants import (
    EVENT_FAILED_CREATE_POD,
    EVENT_FAILED_CREATE_SERVICE,
    EVENT_FAILED_DELETE_JOB,
    EVENT_FAILED_DELETE_POD,
    EVENT_FAILED_DELETE_PODGROUP,
    EVENT_FAILED_DELETE_SERVICE,
    EVENT_SUCCESSFUL_CREATE_POD,
    EVENT_SUCCESSFUL_CREATE_SERVICE,
    EVENT_SUCCESSFUL_DELETE_JOB,
    EVENT_SUCCESSFUL_DELETE_POD,
    EVENT_SUCCESSFUL_DELETE_PODGROUP,
    EVENT_SUCCESSFUL_DELETE_SERVICE,
)
from tfjob.wire import Pod, PodGroup, Service

NORMAL: Final = "Normal"
WARNING: Final = "Warning"


@dataclass(frozen=True)
class Event:
    """A Kubernetes event about the TFJob: type ``Normal`` or ``Warning``, reason, message."""

    type: str
    reason: str
    message: str


def _name_of(obj: Pod | Service | PodGroup) -> str:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("name", ""))


@dataclass(frozen=True)
class CreatePod:
    pod: Pod

    @property
    def name(self) -> str:
        return _name_of(self.pod)

    def success_event(self) -> Event | None:
        return Event(NORMAL, EVENT_SUCCESSFUL_CREATE_POD, f"Created pod: {self.name}")

    def failure_event(self, error: str) -> Event | None:
        return Event(WARNING, EVENT_FAILED_CREATE_POD, f"Error creating: {error}")


@dataclass(frozen=True)
class DeletePod:
    name: str
    uid: str  # a precondition for the delete: never remove a newer pod of the same name

    def success_event(self) -> Event | None:
        return Event(NORMAL, EVENT_SUCCESSFUL_DELETE_POD, f"Deleted pod: {self.name}")

    def failure_event(self, error: str) -> Event | None:
        return Event(WARNING, EVENT_FAILED_DELETE_POD, f"Error deleting: {error}")


@dataclass(frozen=True)
class CreateService:
    service: Service

    @property
    def name(self) -> str:
        return _name_of(self.service)

    def success_event(self) -> Event | None:
        return Event(NORMAL, EVENT_SUCCESSFUL_CREATE_SERVICE, f"Created service: {self.name}")

    def failure_event(self, error: str) -> Event | None:
        return Event(WARNING, EVENT_FAILED_CREATE_SERVICE, f"Error creating: {error}")


@dataclass(frozen=True)
class DeleteService:
    name: str

    def success_event(self) -> Event | None:
        return Event(NORMAL, EVENT_SUCCESSFUL_DELETE_SERVICE, f"Deleted service: {self.name}")

    def failure_event(self, error: str) -> Event | None:
        return Event(WARNING, EVENT_FAILED_DELETE_SERVICE, f"Error deleting: {error}")


@dataclass(frozen=True)
class CreatePodGroup:
    podgroup: PodGroup

    @property
    def name(self) -> str:
        return _name_of(self.podgroup)

    def success_event(self) -> Event | None:
        return None

    def failure_event(self, error: str) -> Event | None:
        return None


@dataclass(frozen=True)
class PatchPodGroup:
    """A JSON merge patch of the PodGroup's spec/metadata; its status is never written (D15)."""

    name: str
    patch: dict[str, Any]

    def success_event(self) -> Event | None:
        return None

    def failure_event(self, error: str) -> Event | None:
        return None


@dataclass(frozen=True)
class DeletePodGroup:
    name: str

    def success_event(self) -> Event | None:
        return Event(NORMAL, EVENT_SUCCESSFUL_DELETE_PODGROUP, f"Deleted PodGroup: {self.name}")

    def failure_event(self, error: str) -> Event | None:
        return Event(WARNING, EVENT_FAILED_DELETE_PODGROUP, f"Error deleting: {error}")


@dataclass(frozen=True)
class DeleteJob:
    """Delete the TFJob itself (TTL after finishing); its children go by garbage collection."""

    name: str
    uid: str

    def success_event(self) -> Event | None:
        return Event(NORMAL, EVENT_SUCCESSFUL_DELETE_JOB, f"Deleted job: {self.name}")

    def failure_event(self, error: str) -> Event | None:
        return Event(WARNING, EVENT_FAILED_DELETE_JOB, f"Error deleting: {error}")


Action = (
    CreatePod
    | DeletePod
    | CreateService
    | DeleteService
    | CreatePodGroup
    | PatchPodGroup
    | DeletePodGroup
    | DeleteJob
)
