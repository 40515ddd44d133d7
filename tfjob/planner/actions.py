"""What a reconcile pass asks the controller to do, and the events it reports about the TFJob.

Actions are carried out in plan order. Each names its ``target`` (the resource, the object's
name and, for a delete, the uid it means: a precondition, so a delete never removes a newer
object of the same name) and its ``verb``, so the controller carries every action out the same
way without looking anything up. The planner emits the *decision* events (conditions,
restarts, exit codes, template overrides); the events that depend on an API call's outcome
(``SuccessfulCreatePod``, ``FailedDeletePodGroup``, ...) are described here, next to the action,
through ``success_event`` / ``failure_event``, so the controller reports every action uniformly
with upstream's reasons and messages (upstream v1.9).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal, cast

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
Reasons = tuple[str, str] | None  # the event reasons of success and failure


@dataclass(frozen=True)
class Target:
    kind: Kind
    name: str
    uid: str = ""  # deletes: only this object; "" for creates and patches


class _Reported:
    """Upstream's events about an action's outcome: ``Created pod: <name>``, ``Error deleting: ...``.

    Each action class names, as class keywords, the resource it targets (``kind``), the object's
    noun in the success message and the (success, failure) event reasons; no reasons: upstream
    reports nothing about that action.
    """

    verb: ClassVar[Verb]
    kind: ClassVar[Kind]
    noun: ClassVar[str] = ""
    reasons: ClassVar[Reasons] = None

    def __init_subclass__(
        cls, *, kind: Kind | None = None, noun: str = "", reasons: Reasons = None, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        if kind is not None:
            cls.kind, cls.noun, cls.reasons = kind, noun, reasons

    @property
    def target(self) -> Target:
        raise NotImplementedError

    def success_event(self) -> Event | None:
        if self.reasons is None:
            return None
        done = "Created" if self.verb == "create" else "Deleted"
        return Event(NORMAL, self.reasons[0], f"{done} {self.noun}: {self.target.name}")

    def failure_event(self, error: str) -> Event | None:
        if self.reasons is None:
            return None
        return Event(WARNING, self.reasons[1], f"Error {self.verb[:-1]}ing: {error}")


class _Create(_Reported):
    """Create the object in the class's one field; its name comes from the object."""

    verb: ClassVar[Verb] = "create"

    @property
    def body(self) -> Mapping[str, Any]:
        (body,) = vars(self).values()  # a create's one field is the object
        return cast(Mapping[str, Any], body)

    @property
    def name(self) -> str:
        return Meta(self.body).name

    @property
    def target(self) -> Target:
        return Target(self.kind, self.name)


@dataclass(frozen=True)
class _Delete(_Reported):
    """Delete ``name`` only while it is the object ``uid`` (a precondition)."""

    name: str
    uid: str
    verb: ClassVar[Verb] = "delete"

    @property
    def target(self) -> Target:
        return Target(self.kind, self.name, self.uid)


@dataclass(frozen=True)
class CreatePod(
    _Create, kind="pods", noun="pod", reasons=(EVENT_SUCCESSFUL_CREATE_POD, EVENT_FAILED_CREATE_POD)
):
    pod: Pod


@dataclass(frozen=True)
class CreateService(
    _Create,
    kind="services",
    noun="service",
    reasons=(EVENT_SUCCESSFUL_CREATE_SERVICE, EVENT_FAILED_CREATE_SERVICE),
):
    service: Service


@dataclass(frozen=True)
class CreatePodGroup(_Create, kind="podgroups"):
    podgroup: PodGroup


@dataclass(frozen=True)
class PatchPodGroup(_Reported, kind="podgroups"):
    """A JSON merge patch of the PodGroup's spec/metadata; its status is never written (D15)."""

    name: str
    patch: dict[str, Any]
    verb: ClassVar[Verb] = "patch"

    @property
    def target(self) -> Target:
        return Target(self.kind, self.name)


@dataclass(frozen=True)
class DeletePod(
    _Delete, kind="pods", noun="pod", reasons=(EVENT_SUCCESSFUL_DELETE_POD, EVENT_FAILED_DELETE_POD)
):
    pass


@dataclass(frozen=True)
class DeleteService(
    _Delete,
    kind="services",
    noun="service",
    reasons=(EVENT_SUCCESSFUL_DELETE_SERVICE, EVENT_FAILED_DELETE_SERVICE),
):
    pass


@dataclass(frozen=True)
class DeletePodGroup(
    _Delete,
    kind="podgroups",
    noun="PodGroup",
    reasons=(EVENT_SUCCESSFUL_DELETE_PODGROUP, EVENT_FAILED_DELETE_PODGROUP),
):
    pass


@dataclass(frozen=True)
class DeleteJob(
    _Delete, kind="tfjobs", noun="job", reasons=(EVENT_SUCCESSFUL_DELETE_JOB, EVENT_FAILED_DELETE_JOB)
):
    """Delete the TFJob itself (TTL after finishing); its children go by garbage collection."""


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
