"""``kubectl tfjob status``: a live job's conditions, replicas, limits and gang, in one view.

``read_status`` does the I/O (the TFJob, its pods, its PodGroup and recent events);
``job_status`` is pure and reads them with the planner's own rules (``tfjob.planner.progress``),
so the restarts, deadlines and gang timeout shown are the ones the controller acts on.

The view is the ``-o yaml|json`` output too, so its fields are an interface: new ones are added,
none renamed. A missing PodGroup says why it is missing (``gang.absence``): the controller creates
it before any pod, deletes it when the job finishes and while the job is suspended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

from kube.api import KubeApi
from kube.errors import BadRequest, NotFound
from kube.resources import EVENTS, PODS
from kubectl_tfjob.resources import TFJOBS, podgroup_resource
from tfjob.constants import COND_SUSPENDED
from tfjob.facts import read_facts
from tfjob.naming import job_selector
from tfjob.planner import format_time, progress
from tfjob.planner.conditions import is_true
from tfjob.planner.observed import restart_count
from tfjob.settings import Settings
from tfjob.wire import PodGroup, TFJob

# Enough to say why a job waits without flooding the terminal.
MAX_EVENTS = 10


class Countdown(TypedDict):
    seconds: int
    at: str
    remaining: int  # seconds; 0 or less: due


class Restarts(TypedDict):
    counted: int
    backoffLimit: int | None
    disruptions: NotRequired[int]  # status.disruptions: each counted once, never toward backoffLimit (D18)


# Why a job has no PodGroup: the controller has not made it yet, or deleted it with the job's end
# (Succeeded or Failed) or its suspension (made again on resume).
Absence = Literal["NotCreatedYet", "DeletedWhenFinished", "DeletedWhileSuspended"]


class GangView(TypedDict):
    podGroup: str
    exists: bool
    absence: NotRequired[Absence]
    phase: str
    admitted: bool
    minMember: NotRequired[int]
    minTaskMember: NotRequired[dict[str, int]]
    networkTopology: NotRequired[dict[str, Any]]
    queue: NotRequired[str]
    running: NotRequired[int]
    conditions: list[dict[str, Any]]
    scheduleTimeout: NotRequired[Countdown]


class PodRow(TypedDict):
    name: str
    phase: str
    restarts: int
    node: str


class JobStatusView(TypedDict):
    namespace: str
    name: str
    state: str
    conditions: list[dict[str, Any]]
    replicaStatuses: dict[str, Any]
    desiredReplicas: dict[str, int]  # the spec's replicas per type, defaulted (1 when unset)
    startTime: NotRequired[str]
    completionTime: NotRequired[str]
    restarts: Restarts
    activeDeadline: NotRequired[Countdown]
    gang: NotRequired[GangView]
    pods: list[PodRow]
    events: list[dict[str, Any]]


async def read_status(
    api: KubeApi, name: str, namespace: str, settings: Settings, now: datetime
) -> JobStatusView:
    """Raises ``NotFound`` when there is no such TFJob."""
    job: Any = await api.get(TFJOBS, name, namespace)
    selector = ",".join(f"{key}={value}" for key, value in job_selector(name).items())
    pods, _ = await api.list_all(PODS, namespace, label_selector=selector)
    podgroup: Any = None
    if settings.gang_enabled:
        try:
            podgroup = await api.get(podgroup_resource(settings), name, namespace)
        except NotFound:
            podgroup = None
    events = await _events(api, namespace, name)
    return job_status(job, pods, podgroup, events, settings, now)


async def _events(api: KubeApi, namespace: str, name: str) -> list[dict[str, Any]]:
    try:
        items, _ = await api.list_all(EVENTS, namespace, field_selector=f"involvedObject.name={name}")
    except BadRequest:  # a server without that field selector: no events rather than no status
        return []
    return items


def job_status(
    job: TFJob,
    pods: Sequence[Mapping[str, Any]],
    podgroup: PodGroup | None,
    events: Sequence[Mapping[str, Any]],
    settings: Settings,
    now: datetime,
) -> JobStatusView:
    metadata: Any = job.get("metadata") or {}
    status: Any = job.get("status") or {}
    conditions = [dict(c) for c in status.get("conditions") or () if isinstance(c, dict)]
    limits = progress(job, pods, podgroup, now, settings)
    view = JobStatusView(
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        state=str(conditions[-1].get("type") or "") if conditions else "",
        conditions=conditions,
        replicaStatuses=dict(status.get("replicaStatuses") or {}),
        desiredReplicas={replica.rtype: replica.replicas for replica in read_facts(job).replica_types},
        restarts=_restarts(limits.restarts, limits.backoff_limit, status.get("disruptions")),
        pods=sorted((_pod_row(pod) for pod in pods), key=lambda row: row["name"]),
        events=_recent(events),
    )
    start, completion = status.get("startTime"), status.get("completionTime")
    if isinstance(start, str):
        view["startTime"] = start
    if isinstance(completion, str):
        view["completionTime"] = completion
    run_policy: Any = (job.get("spec") or {}).get("runPolicy") or {}
    if limits.deadline is not None:
        view["activeDeadline"] = _countdown(run_policy.get("activeDeadlineSeconds"), limits.deadline, now)
    if settings.gang_enabled:
        view["gang"] = _gang(view["name"], podgroup, limits.podgroup_phase, limits.gang_admitted)
        if podgroup is None:
            view["gang"]["absence"] = (
                "DeletedWhenFinished"
                if limits.finished
                else "DeletedWhileSuspended"
                if is_true(status.get("conditions") or [], COND_SUSPENDED)
                else "NotCreatedYet"
            )
        if limits.gang_deadline is not None:
            timeout = (run_policy.get("schedulingPolicy") or {}).get("scheduleTimeoutSeconds")
            view["gang"]["scheduleTimeout"] = _countdown(timeout, limits.gang_deadline, now)
    return view


def _countdown(seconds: object, at: datetime, now: datetime) -> Countdown:
    return Countdown(
        seconds=seconds if isinstance(seconds, int) else 0,
        at=format_time(at),
        remaining=int((at - now).total_seconds()),
    )


def _restarts(counted: int, backoff_limit: int | None, disruptions: object) -> Restarts:
    restarts = Restarts(counted=counted, backoffLimit=backoff_limit)
    if isinstance(disruptions, int) and not isinstance(disruptions, bool) and disruptions > 0:
        restarts["disruptions"] = disruptions
    return restarts


def _gang(name: str, podgroup: PodGroup | None, phase: str, admitted: bool) -> GangView:
    gang = GangView(podGroup=name, exists=podgroup is not None, phase=phase, admitted=admitted, conditions=[])
    if podgroup is None:
        return gang
    spec: Any = podgroup.get("spec") or {}
    status: Any = podgroup.get("status") or {}
    if isinstance(spec.get("minMember"), int):
        gang["minMember"] = spec["minMember"]
    if isinstance(spec.get("minTaskMember"), dict) and spec["minTaskMember"]:
        gang["minTaskMember"] = dict(spec["minTaskMember"])
    if isinstance(spec.get("networkTopology"), dict):
        gang["networkTopology"] = dict(spec["networkTopology"])
    if spec.get("queue"):
        gang["queue"] = str(spec["queue"])
    if isinstance(status.get("running"), int):
        gang["running"] = status["running"]
    gang["conditions"] = [dict(c) for c in status.get("conditions") or () if isinstance(c, dict)]
    return gang


def _pod_row(pod: Mapping[str, Any]) -> PodRow:
    metadata: Any = pod.get("metadata") or {}
    status: Any = pod.get("status") or {}
    spec: Any = pod.get("spec") or {}
    return PodRow(
        name=str(metadata.get("name") or ""),
        phase=str(status.get("phase") or "Pending"),
        restarts=restart_count(pod),
        node=str(spec.get("nodeName") or ""),
    )


def _recent(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    def when(event: Mapping[str, Any]) -> str:
        return str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or "")

    rows = [
        {
            "type": event.get("type") or "",
            "reason": event.get("reason") or "",
            "object": f"{(event.get('involvedObject') or {}).get('kind', '')}/"
            f"{(event.get('involvedObject') or {}).get('name', '')}",
            "count": event.get("count") or 1,
            "lastTimestamp": when(event),
            "message": event.get("message") or "",
        }
        for event in sorted(events, key=when)
    ]
    return rows[-MAX_EVENTS:]
