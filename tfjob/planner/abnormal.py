"""Warning events about active pods that are in trouble (upstream v1.9, upstream's
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


def _warning(source: Mapping[str, Any], message: str) -> Event:
    """A Warning with the reason of the state or condition ``source`` (``Error`` without one)."""
    return Event(WARNING, str(source.get("reason") or FALLBACK_REASON), message)


def _container_events(pod_name: str, entry: Mapping[str, Any]) -> list[Event]:
    events = []
    container = entry.get("name", "")
    state = entry.get("state")
    state = state if isinstance(state, Mapping) else {}
    terminated = state.get("terminated")
    if isinstance(terminated, Mapping):
        code = terminated.get("exitCode")
        if isinstance(code, int) and code != 0:
            message = f"exitCode: {code} terminated message: {terminated.get('message') or ''}"
            events.append(_warning(terminated, f"Error pod {pod_name} container {container} {message}"))
    waiting = state.get("waiting")
    if isinstance(waiting, Mapping) and waiting.get("message"):
        message = f"waiting message: {waiting.get('message')}"
        events.append(_warning(waiting, f"Error pod {pod_name} container {container} {message}"))
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
            message = f"condition message: {latest.get('message') or ''}"
            events.append(_warning(latest, f"Error pod {name} {message}"))
    return events
