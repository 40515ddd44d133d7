"""Container states as the kubelet reports them, as immutable values, and their wire form."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final, NotRequired, TypedDict

CONTAINER_CREATING: Final = "ContainerCreating"
POD_INITIALIZING: Final = "PodInitializing"
CRASH_LOOP_BACK_OFF: Final = "CrashLoopBackOff"
CREATE_CONFIG_ERROR: Final = "CreateContainerConfigError"
COMPLETED: Final = "Completed"
ERROR: Final = "Error"
OOM_KILLED: Final = "OOMKilled"
START_ERROR: Final = "StartError"
"""containerd's reason for a container whose process could not be started (exit code 128)."""
RUN_CONTAINER_ERROR: Final = "RunContainerError"
"""The kubelet's waiting reason for a container whose start failed and is to be tried again."""


class WaitingWire(TypedDict):
    reason: str
    message: NotRequired[str]


class RunningWire(TypedDict):
    startedAt: str


class TerminatedWire(TypedDict):
    exitCode: int
    reason: str
    startedAt: str
    finishedAt: str
    containerID: NotRequired[str]
    signal: NotRequired[int]
    message: NotRequired[str]


class StateWire(TypedDict, total=False):
    waiting: WaitingWire
    running: RunningWire
    terminated: TerminatedWire


class ContainerStatusWire(TypedDict):
    name: str
    image: str
    imageID: str
    ready: bool
    started: bool
    restartCount: int
    state: StateWire
    lastState: StateWire
    containerID: NotRequired[str]


@dataclass(frozen=True)
class Waiting:
    reason: str
    message: str = ""


@dataclass(frozen=True)
class Running:
    started_at: str


@dataclass(frozen=True)
class Terminated:
    exit_code: int
    started_at: str
    finished_at: str
    signal: int | None = None
    special_reason: str = ""
    """Set when the container never ran, e.g. ``StartError`` for a missing executable."""
    message: str = ""

    @property
    def reason(self) -> str:
        if self.special_reason:
            return self.special_reason
        return COMPLETED if self.exit_code == 0 else ERROR


ContainerState = Waiting | Running | Terminated


@dataclass(frozen=True)
class ContainerRecord:
    """What the node agent knows about one container of a pod."""

    name: str
    image: str
    state: ContainerState
    last_state: Terminated | None = None
    restart_count: int = 0
    container_id: str = ""
    last_container_id: str = ""
    earlier_state: Terminated | None = None
    """While the container waits to restart: the termination before ``last_state``, which is the
    last state again if the pod is stopped before the restart (the runtime still has both)."""


def exit_code_of(returncode: int) -> tuple[int, int | None]:
    """A process return code as a container exit code and signal (killed by 9 -> 137)."""
    if returncode < 0:
        return 128 - returncode, -returncode
    return returncode, None


def after_exit(
    record: ContainerRecord, returncode: int, now: str, oom_killed: bool = False
) -> ContainerRecord:
    """A running container whose process ended with ``returncode`` (``oom_killed``: by the node
    for exceeding its memory limit, which the runtime reports as ``OOMKilled`` when it died of it)."""
    if not isinstance(record.state, Running):
        return record
    exit_code, signum = exit_code_of(returncode)
    reason = OOM_KILLED if oom_killed and exit_code == 137 else ""
    return replace(
        record, state=Terminated(exit_code, record.state.started_at, now, signum, special_reason=reason)
    )


def after_pod_stopped(record: ContainerRecord, now: str) -> ContainerRecord:
    """How a container reads once its pod is stopped for deletion: a container waiting to restart
    shows its last termination; one that never ran is ``ContainerStatusUnknown`` (exit 137)."""
    if not isinstance(record.state, Waiting):
        return record
    if record.last_state is not None:
        return ContainerRecord(
            record.name,
            record.image,
            record.last_state,
            record.earlier_state,
            record.restart_count,
            record.last_container_id,
        )
    never_ran = Terminated(
        137,
        "",
        now,
        special_reason="ContainerStatusUnknown",
        message="The container could not be located when the pod was terminated",
    )
    return replace(record, state=never_ran)


def _state_wire(state: ContainerState | None, container_id: str) -> StateWire:
    if state is None:
        return StateWire()
    if isinstance(state, Waiting):
        waiting = WaitingWire(reason=state.reason)
        if state.message:
            waiting["message"] = state.message
        return StateWire(waiting=waiting)
    if isinstance(state, Running):
        return StateWire(running=RunningWire(startedAt=state.started_at))
    terminated = TerminatedWire(
        exitCode=state.exit_code,
        reason=state.reason,
        startedAt=state.started_at,
        finishedAt=state.finished_at,
    )
    if container_id:
        terminated["containerID"] = container_id
    # ``signal`` stays unset: the kubelet never fills it in (a signal shows as exit code 128 + n).
    if state.message:
        terminated["message"] = state.message
    return StateWire(terminated=terminated)


def container_status_wire(record: ContainerRecord) -> ContainerStatusWire:
    running = isinstance(record.state, Running)
    current_id = record.container_id if not isinstance(record.state, Waiting) else ""
    status = ContainerStatusWire(
        name=record.name,
        image=record.image,
        imageID="",
        ready=running,
        started=running,
        restartCount=record.restart_count,
        state=_state_wire(record.state, current_id),
        lastState=_state_wire(record.last_state, record.last_container_id),
    )
    container_id = current_id or (record.last_container_id if isinstance(record.state, Waiting) else "")
    if container_id:
        status["containerID"] = container_id
    return status
