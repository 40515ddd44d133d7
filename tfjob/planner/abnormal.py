"""Warning events about active pods that are in trouble (reference §7.2, upstream's
``RecordAbnormalPods``): a container terminated with a non-zero code (an in-place restart is
coming), a container waiting with a message (``CrashLoopBackOff``, ``ImagePullBackOff``), or,
before any container exists, the pod's latest condition that is not True (``Unschedulable``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubeobjects.meta import Meta
from tfjob.planner.actions import WARNING, Event

FALLBACK_REASON = "Error"


def _container_events(pod_name: str, entry: Mapping[str, Any]) -> list[Event]:
    events = []
    container = entry.get("name", "")
    state = entry.get("state")
    state = state if isinstance(state, Mapping) else {}
    terminated = state.get("terminated")
    if isinstance(terminated, Mapping):
        code = terminated.get("exitCode")
        if isinstance(code, int) and code != 0:
            events.append(
                Event(
                    WARNING,
                    str(terminated.get("reason") or FALLBACK_REASON),
                    f"Error pod {pod_name} container {container} exitCode: {code} "
                    f"terminated message: {terminated.get('message') or ''}",
                )
            )
    waiting = state.get("waiting")
    if isinstance(waiting, Mapping) and waiting.get("message"):
        events.append(
            Event(
                WARNING,
                str(waiting.get("reason") or FALLBACK_REASON),
                f"Error pod {pod_name} container {container} waiting message: {waiting.get('message')}",
            )
        )
    return events


def _entries(status: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    found = status.get(key)
    return [entry for entry in found if isinstance(entry, Mapping)] if isinstance(found, list) else []


def abnormal_pod_events(active_pods: Iterable[Mapping[str, Any]]) -> list[Event]:
    events: list[Event] = []
    for pod in active_pods:
        name = Meta(pod).name
        status = pod.get("status")
        status = status if isinstance(status, Mapping) else {}
        containers = _entries(status, "containerStatuses") or _entries(status, "initContainerStatuses")
        if containers:
            for entry in containers:
                events.extend(_container_events(name, entry))
            continue
        conditions = _entries(status, "conditions")
        if not conditions:
            continue
        latest = max(conditions, key=lambda condition: str(condition.get("lastTransitionTime") or ""))
        if latest.get("status") != "True":
            events.append(
                Event(
                    WARNING,
                    str(latest.get("reason") or FALLBACK_REASON),
                    f"Error pod {name} condition message: {latest.get('message') or ''}",
                )
            )
    return events
