"""The pod status a kubelet writes, composed from what the node agent knows. Pure.

Phase (kubelet's rules): any container not yet started -> Pending; some running -> Running; all
stopped -> Succeeded when all exited 0, else Failed under ``Never`` (or when the pod is being
deleted), else Running (a restart is coming). A container waiting to restart counts as stopped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NotRequired, TypedDict

from kubeobjects.pods import PodPhase
from sandbox.kubelet.containers import (
    ContainerRecord,
    ContainerStatusWire,
    Running,
    Terminated,
    Waiting,
    container_status_wire,
)

TERMINAL_PHASES: Final = frozenset({PodPhase.SUCCEEDED, PodPhase.FAILED})
POD_COMPLETED: Final = "PodCompleted"
POD_FAILED: Final = "PodFailed"
SANDBOX_NOT_READY: Final = "PodSandboxNotReady"
CONDITION_ORDER: Final = (
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
)


class PodConditionWire(TypedDict):
    type: str
    status: str
    lastProbeTime: None
    lastTransitionTime: str
    reason: NotRequired[str]
    message: NotRequired[str]


class PodIPWire(TypedDict):
    ip: str


class PodStatusWire(TypedDict):
    phase: str
    conditions: list[PodConditionWire]
    containerStatuses: list[ContainerStatusWire]
    hostIP: str
    hostIPs: list[PodIPWire]
    startTime: str
    podIP: NotRequired[str]
    podIPs: NotRequired[list[PodIPWire]]
    initContainerStatuses: NotRequired[list[ContainerStatusWire]]


@dataclass(frozen=True)
class PodView:
    """The node agent's knowledge of one pod at one moment."""

    containers: tuple[ContainerRecord, ...]
    host_ip: str
    start_time: str
    pod_ip: str = ""
    """Published once the containers have started; ``kubectl get -owide`` shows <none> before."""
    sandbox_ready: bool = False
    deleting: bool = False
    init_containers: tuple[ContainerRecord, ...] = ()
    """Run one by one, each to success, before any app container starts."""
    sandbox_created: bool = True
    """False before the pod's first start ("no pod sandbox exists"); a sandbox that is not ready
    afterwards has been stopped with the pod."""


def should_restart(restart_policy: str, exit_code: int) -> bool:
    if restart_policy == "Always":
        return True
    if restart_policy == "OnFailure":
        return exit_code != 0
    return False


def init_succeeded(record: ContainerRecord) -> bool:
    return isinstance(record.state, Terminated) and record.state.exit_code == 0


def init_failed(record: ContainerRecord) -> bool:
    """Its last run failed (it may be waiting to run again)."""
    if isinstance(record.state, Terminated):
        return record.state.exit_code != 0
    return (
        isinstance(record.state, Waiting)
        and record.last_state is not None
        and record.last_state.exit_code != 0
    )


def compute_phase(
    restart_policy: str,
    containers: Sequence[ContainerRecord],
    deleting: bool = False,
    init_containers: Sequence[ContainerRecord] = (),
) -> PodPhase:
    if not all(init_succeeded(r) for r in init_containers):
        # Still initializing: Pending, unless an init container failed for good.
        failed = any(init_failed(r) for r in init_containers)
        return PodPhase.FAILED if failed and (restart_policy == "Never" or deleting) else PodPhase.PENDING
    waiting = running = stopped = succeeded = 0
    for record in containers:
        state = record.state
        if isinstance(state, Running):
            running += 1
        elif isinstance(state, Terminated):
            stopped += 1
            succeeded += state.exit_code == 0
        elif record.last_state is not None:
            stopped += 1
            succeeded += record.last_state.exit_code == 0
        else:
            waiting += 1
    if waiting:
        return PodPhase.PENDING
    if running:
        return PodPhase.RUNNING
    if not stopped:
        return PodPhase.PENDING
    if deleting:
        return PodPhase.SUCCEEDED if stopped == succeeded else PodPhase.FAILED
    if restart_policy == "Always":
        return PodPhase.RUNNING
    if stopped == succeeded:
        return PodPhase.SUCCEEDED
    if restart_policy == "Never":
        return PodPhase.FAILED
    return PodPhase.RUNNING


def _condition(
    existing: Mapping[str, Mapping[str, Any]],
    type_: str,
    status: bool,
    now: str,
    reason: str = "",
    message: str = "",
) -> PodConditionWire:
    text = "True" if status else "False"
    old = existing.get(type_) or {}
    since = str(old.get("lastTransitionTime") or now) if old.get("status") == text else now
    condition = PodConditionWire(type=type_, status=text, lastProbeTime=None, lastTransitionTime=since)
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _copy_condition(raw: Mapping[str, Any]) -> PodConditionWire:
    condition = PodConditionWire(
        type=str(raw.get("type") or ""),
        status=str(raw.get("status") or ""),
        lastProbeTime=None,
        lastTransitionTime=str(raw.get("lastTransitionTime") or ""),
    )
    if raw.get("reason"):
        condition["reason"] = str(raw["reason"])
    if raw.get("message"):
        condition["message"] = str(raw["message"])
    return condition


def compose_status(
    pod: Mapping[str, Any], view: PodView, now: str, phase: str | None = None
) -> PodStatusWire:
    """The whole ``status`` to write; ``phase`` overrides the computed one (a terminal phase is final)."""
    spec = pod.get("spec") or {}
    old_status = pod.get("status") or {}
    restart_policy = str(spec.get("restartPolicy") or "Always")
    phase = phase or compute_phase(restart_policy, view.containers, view.deleting, view.init_containers)
    existing = {str(c.get("type")): c for c in old_status.get("conditions") or [] if isinstance(c, Mapping)}
    terminal = phase in TERMINAL_PHASES
    unready = [r.name for r in view.containers if not isinstance(r.state, Running)]
    if terminal:
        ready_reason = POD_COMPLETED if phase == PodPhase.SUCCEEDED else POD_FAILED
        ready_message = ""
    elif unready:
        ready_reason, ready_message = (
            "ContainersNotReady",
            f"containers with unready status: [{' '.join(unready)}]",
        )
    else:
        ready_reason = ready_message = ""
    all_ready = not unready and not terminal
    incomplete = [r.name for r in view.init_containers if not init_succeeded(r)]
    # Once an app container has run, the pod has been initialized (the kubelet's rule).
    started = any(isinstance(r.state, Running | Terminated) for r in view.containers)
    if phase == PodPhase.SUCCEEDED:
        initialized = _condition(existing, "Initialized", True, now, POD_COMPLETED)
    elif incomplete and not started:
        initialized = _condition(
            existing,
            "Initialized",
            False,
            now,
            "ContainersNotInitialized",
            f"containers with incomplete status: [{' '.join(incomplete)}]",
        )
    else:
        initialized = _condition(existing, "Initialized", True, now)
    sandbox_ready = view.sandbox_ready and not terminal
    conditions = [
        _condition(
            existing,
            "PodReadyToStartContainers",
            sandbox_ready,
            now,
            "" if sandbox_ready else SANDBOX_NOT_READY,
            ""
            if sandbox_ready
            else "pod sandbox is not ready"
            if view.sandbox_created
            else "no pod sandbox exists",
        ),
        initialized,
        _condition(existing, "Ready", all_ready, now, ready_reason, ready_message),
        _condition(existing, "ContainersReady", all_ready, now, ready_reason, ready_message),
    ]
    scheduled = existing.get("PodScheduled")
    if scheduled is not None and scheduled.get("status") == "True":
        conditions.append(_copy_condition(scheduled))
    else:
        conditions.append(_condition({}, "PodScheduled", True, now))
    ours = set(CONDITION_ORDER)
    others = [_copy_condition(c) for t, c in existing.items() if t not in ours]
    status = PodStatusWire(
        phase=phase,
        conditions=conditions + others,
        containerStatuses=[container_status_wire(r) for r in view.containers],
        hostIP=view.host_ip,
        hostIPs=[PodIPWire(ip=view.host_ip)],
        startTime=view.start_time,
    )
    if view.init_containers:
        status["initContainerStatuses"] = [init_status_wire(r) for r in view.init_containers]
    if view.pod_ip:
        status["podIP"] = view.pod_ip
        status["podIPs"] = [PodIPWire(ip=view.pod_ip)]
    return status


def init_status_wire(record: ContainerRecord) -> ContainerStatusWire:
    """An init container reads ready once it has completed successfully."""
    status = container_status_wire(record)
    status["ready"] = init_succeeded(record)
    status["started"] = isinstance(record.state, Running)
    return status


def waiting_records(pod: Mapping[str, Any], reason: str) -> tuple[ContainerRecord, ...]:
    """Every container of ``pod`` waiting for ``reason``: the status before anything starts."""
    containers = (pod.get("spec") or {}).get("containers") or []
    return tuple(
        ContainerRecord(name=str(c.get("name", "")), image=str(c.get("image", "")), state=Waiting(reason))
        for c in containers
    )
