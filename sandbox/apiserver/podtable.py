"""The pod row of kube-apiserver's table printer: READY, STATUS, RESTARTS, AGE and the wide columns.

STATUS follows the printer's order: the pod's reason or phase, init container states
(``Init:N/M``, ``Init:Error``...), then container waiting/terminated reasons (``ContainerCreating``,
``CrashLoopBackOff``, ``Error``, ``Completed``), and ``Terminating`` once a deletionTimestamp is set on a
pod that is not finished. RESTARTS shows ``N (Xs ago)`` from the last termination's finishedAt.
"""

from __future__ import annotations

import datetime
from typing import Any, Final, NamedTuple

from kubeobjects.meta import Meta
from kubeobjects.times import age, human_duration, parse_time
from sandbox.apiserver.jsonobj import JsonObj


class Column(NamedTuple):
    """A column definition as kube-apiserver's printers declare it; priority 1 shows only with ``-o wide``."""

    name: str
    type: str = "string"
    format: str = ""
    priority: int = 0


NAME: Final = Column("Name", format="name")


def shown(*names: str) -> list[Column]:
    return [Column(name) for name in names]


def wide(*names: str) -> list[Column]:
    return [Column(name, priority=1) for name in names]


POD_COLUMNS: list[Column] = [
    NAME,
    *shown("Ready", "Status", "Restarts", "Age"),
    *wide("IP", "Node", "Nominated Node", "Readiness Gates"),
]


def _restartable(container: JsonObj | None) -> bool:
    return bool(container) and (container or {}).get("restartPolicy") == "Always"


def _later(current: datetime.datetime | None, candidate: Any) -> datetime.datetime | None:
    moment = parse_time(candidate)
    if moment is None:
        return current
    return moment if current is None or moment > current else current


def pod_row(pod: JsonObj, now: datetime.datetime) -> list[Any]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    conditions = status.get("conditions") or []
    total = len(spec.get("containers") or [])
    ready = restarts = sidecar_restarts = 0
    last_restart: datetime.datetime | None = None
    sidecar_last_restart: datetime.datetime | None = None
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for condition in conditions:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    total += sum(1 for c in init_specs.values() if _restartable(c))
    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for index, container in enumerate(init_statuses):
        restarts += int(container.get("restartCount") or 0)
        last_terminated = (container.get("lastState") or {}).get("terminated")
        if last_terminated:
            last_restart = _later(last_restart, last_terminated.get("finishedAt"))
        sidecar = _restartable(init_specs.get(container.get("name")))
        if sidecar:
            sidecar_restarts += int(container.get("restartCount") or 0)
            if last_terminated:
                sidecar_last_restart = _later(sidecar_last_restart, last_terminated.get("finishedAt"))
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated and int(terminated.get("exitCode") or 0) == 0:
            continue
        if sidecar and container.get("started"):
            if container.get("ready"):
                ready += 1
            continue
        if terminated:
            if not terminated.get("reason"):
                signal = int(terminated.get("signal") or 0)
                reason = (
                    f"Init:Signal:{signal}"
                    if signal
                    else f"Init:ExitCode:{int(terminated.get('exitCode') or 0)}"
                )
            else:
                reason = "Init:" + str(terminated["reason"])
        elif waiting and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = "Init:" + str(waiting["reason"])
        else:
            reason = f"Init:{index}/{len(init_specs)}"
        initializing = True
        break
    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions)
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, sidecar_last_restart
        has_running = False
        for container in reversed(status.get("containerStatuses") or []):
            restarts += int(container.get("restartCount") or 0)
            last_terminated = (container.get("lastState") or {}).get("terminated")
            if last_terminated:
                last_restart = _later(last_restart, last_terminated.get("finishedAt"))
            state = container.get("state") or {}
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if waiting and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif terminated and terminated.get("reason"):
                reason = str(terminated["reason"])
            elif terminated:
                signal = int(terminated.get("signal") or 0)
                reason = f"Signal:{signal}" if signal else f"ExitCode:{int(terminated.get('exitCode') or 0)}"
            elif container.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
            reason = "Running" if pod_ready else "NotReady"
    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        restarts_text = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"
    pod_ips = status.get("podIPs") or []
    pod_ip = (pod_ips[0].get("ip") if pod_ips else "") or "<none>"
    readiness_gates = "<none>"
    gates = spec.get("readinessGates") or []
    if gates:
        true_count = 0
        for gate in gates:
            for condition in conditions:
                if condition.get("type") == gate.get("conditionType"):
                    true_count += condition.get("status") == "True"
                    break
        readiness_gates = f"{true_count}/{len(gates)}"
    return [
        Meta(pod).name,
        f"{ready}/{total}",
        reason,
        restarts_text,
        age(pod, now),
        pod_ip,
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        readiness_gates,
    ]
