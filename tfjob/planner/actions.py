"""What a reconcile pass asks the controller to do, and the events it reports about the TFJob.

Actions are carried out in plan order. Each names its ``target`` (the resource, the object's
name and, for a delete, the uid it means: a precondition, so a delete never removes a newer
object of the same name) and its ``verb``, so the controller carries every action out the same
way without looking anything up. The planner emits the *decision* events (conditions,
restarts, exit codes, template overrides); the events that depend on an API call's outcome
(``SuccessfulCreatePod``, ``FailedDeletePodGroup``, ...) are described here, next to the action,
through ``success_event`` / ``failure_event``, so the controller reports every action uniformly
with upstream's reasons and messages (reference §3.4, §3.5, §5.8, §7.2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal

from kubeobjects.meta import Meta
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


# The resources actions touch, by plural; the controller maps each to its API resource.
Kind = Literal["pods", "services", "podgroups", "tfjobs"]
Verb = Literal["create", "patch", "delete"]


@dataclass(frozen=True)
class Target:
    kind: Kind
    name: str
    uid: str = ""  # deletes: only this object; "" for creates and patches


@dataclass(frozen=True)
class CreatePod:
    pod: Pod
    verb: ClassVar[Verb] = "create"

    @property
    def name(self) -> str:
        return Meta(self.pod).name

    @property
    def body(self) -> Mapping[str, Any]:
        return self.pod

    @property
    def target(self) -> Target:
        return Target("pods", self.name)

    def success_event(self) -> Event | None:
        return Event(NORMAL, EVENT_SUCCESSFUL_CREATE_POD, f"Created pod: {self.name}")

    def failure_event(self, error: str) -> Event | None:
        return Event(WARNING, EVENT_FAILED_CREATE_POD, f"Error creating: {error}")


@dataclass(frozen=True)
class DeletePod:
    name: str
    uid: str
    verb: ClassVar[Verb] = "delete"

    @property
    def target(self) -> Target:
        return Target("pods", self.name, self.uid)

    def success_event(self) -> Event | None:
        return Event(NORMAL, EVENT_SUCCESSFUL_DELETE_POD, f"Deleted pod: {self.name}")

    def failure_event(self, error: str) -> Event | None:
        return Event(WARNING, EVENT_FAILED_DELETE_POD, f"Error deleting: {error}")


@dataclass(frozen=True)
class CreateService:
    service: Service
    verb: ClassVar[Verb] = "create"

    @property
    def name(self) -> str:
        return Meta(self.service).name

    @property
    def body(self) -> Mapping[str, Any]:
        return self.service

    @property
    def target(self) -> Target:
        return Target("services", self.name)

    def success_event(self) -> Event | None:
        return Event(NORMAL, EVENT_SUCCESSFUL_CREATE_SERVICE, f"Created service: {self.name}")

    def failure_event(self, error: str) -> Event | None:
        return Event(WARNING, EVENT_FAILED_CREATE_SERVICE, f"Error creating: {error}")


@dataclass(frozen=True)
class DeleteService:
    name: str
    uid: str
    verb: ClassVar[Verb] = "delete"

    @property
    def target(self) -> Target:
        return Target("services", self.name, self.uid)

    def success_event(self) -> Event | None:
        return Event(NORMAL, EVENT_SUCCESSFUL_DELETE_SERVICE, f"Deleted service: {self.name}")

    def failure_event(self, error: str) -> Event | None:
        return Event(WARNING, EVENT_FAILED_DELETE_SERVICE, f"Error deleting: {error}")


@dataclass(frozen=True)
class CreatePodGroup:
    podgroup: PodGroup
    verb: ClassVar[Verb] = "create"

    @property
    def name(self) -> str:
        return Meta(self.podgroup).name

    @property
    def body(self) -> Mapping[str, Any]:
        return self.podgroup

    @property
    def target(self) -> Target:
        return Target("podgroups", self.name)

    def success_event(self) -> Event | None:
        return None

    def failure_event(self, error: str) -> Event | None:
        return None


@dataclass(frozen=True)
class PatchPodGroup:
    """A JSON merge patch of the PodGroup's spec/metadata; its status is never written (D15)."""

    name: str
    patch: dict[str, Any]
    verb: ClassVar[Verb] = "patch"

    @property
    def target(self) -> Target:
        return Target("podgroups", self.name)

    def success_event(self) -> Event | None:
        return None

    def failure_event(self, error: str) -> Event | None:
        return None


@dataclass(frozen=True)
class DeletePodGroup:
    name: str
    uid: str
    verb: ClassVar[Verb] = "delete"

    @property
    def target(self) -> Target:
        return Target("podgroups", self.name, self.uid)

    def success_event(self) -> Event | None:
        return Event(NORMAL, EVENT_SUCCESSFUL_DELETE_PODGROUP, f"Deleted PodGroup: {self.name}")

    def failure_event(self, error: str) -> Event | None:
        return Event(WARNING, EVENT_FAILED_DELETE_PODGROUP, f"Error deleting: {error}")


@dataclass(frozen=True)
class DeleteJob:
    """Delete the TFJob itself (TTL after finishing); its children go by garbage collection."""

    name: str
    uid: str
    verb: ClassVar[Verb] = "delete"

    @property
    def target(self) -> Target:
        return Target("tfjobs", self.name, self.uid)

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
Create = CreatePod | CreateService | CreatePodGroup
Delete = DeletePod | DeleteService | DeletePodGroup | DeleteJob
