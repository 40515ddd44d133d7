"""Why a job that should be starting is not: the gang scheduler's and the API's own words.

Volcano says why a gang waits in three places, read here in order:

1. the PodGroup's current condition (the True one with the newest ``lastTransitionTime``): an
   ``Unschedulable`` one carries ``<N>/<M> tasks in gang unschedulable: <fit error>``;
2. while the PodGroup is not yet admitted and has no pods (pods are held back until Inqueue), no
   condition is written, only Normal ``Unschedulable`` events on the PodGroup from the enqueue
   checks: ``queue resource quota insufficient: ...``, ``resource in cluster is overused: ...``,
   a queue that is not open. The newest event about this very PodGroup (by uid) is read;
3. the pods' ``PodScheduled=False`` conditions (any scheduler), e.g. ``0/1 nodes are available:
   1 node(s) had untolerated taint``.

A reason is reported once it has held for ``grace`` seconds, measured from when Volcano first
said it: between a PodGroup's admission and its binding the scheduler routinely writes an
``Unschedulable`` condition for a session or two (some pods created, not all), and reporting that
would cost status writes on every job for nothing. The planner asks to run again when the grace
of a young reason ends. Zero counts (``0/0 tasks ... pod group is not ready, N minAvailable``, the
Warning Volcano repeats while pods are held back) say nothing and are not reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from kubeobjects.meta import Meta, mapping
from kubeobjects.times import parse_time
from tfjob.constants import (
    COND_CREATED,
    EVENT_PODGROUP_PENDING,
    REASON_ADMISSION_WEBHOOK_MISSING,
    REASON_CREATED,
)
from tfjob.planner.actions import WARNING
from tfjob.planner.conditions import TRUE, find_condition, is_finished
from tfjob.planner.draft import Draft
from tfjob.wire import JobStatus, PodGroup

PODGROUP_UNSCHEDULABLE: Final = "Unschedulable"
PHASES_WAITING: Final = frozenset({"", "Pending", "Inqueue"})
PHASES_NOT_ADMITTED: Final = frozenset({"", "Pending"})
POD_SCHEDULED: Final = "PodScheduled"
POD_UNSCHEDULABLE: Final = "Unschedulable"
# How long a message may be before it is cut: it goes into a condition and an event.
MAX_MESSAGE: Final = 1024


@dataclass(frozen=True)
class WaitReason:
    """One reason the job waits: where it comes from, Volcano's or the API's text, since when."""

    source: str  # "PodGroup <name> is <phase>" or "pod <name> is unschedulable"
    reason: str  # the condition or event reason, e.g. NotEnoughResources
    message: str
    since: datetime

    @property
    def from_podgroup(self) -> bool:
        return self.source.startswith("PodGroup ")

    @property
    def text(self) -> str:
        return bounded(f"{self.source} ({self.reason}): {self.message}")


@dataclass(frozen=True)
class Waiting:
    reason: WaitReason | None  # a reason that has held for the grace period
    recheck_in: float | None  # seconds until a younger reason's grace ends


def bounded(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


def _phase(podgroup: PodGroup) -> str:
    phase = mapping(podgroup.get("status")).get("phase")
    return phase if isinstance(phase, str) else ""


def _newest_first(when: datetime | None) -> float:
    return when.timestamp() if when is not None else float("-inf")


def _current_condition(podgroup: PodGroup) -> Mapping[str, Any] | None:
    """The True condition with the newest lastTransitionTime (conditions never turn False)."""
    conditions = mapping(podgroup.get("status")).get("conditions")
    newest: tuple[float, Mapping[str, Any]] | None = None
    for condition in conditions if isinstance(conditions, list) else ():
        condition = mapping(condition)
        if condition.get("status") != "True":
            continue
        when = _newest_first(parse_time(condition.get("lastTransitionTime")))
        if newest is None or when >= newest[0]:
            newest = (when, condition)
    return newest[1] if newest is not None else None


def _says_nothing(message: str) -> bool:
    return message.startswith("0/0 tasks in gang unschedulable")


def _from_condition(podgroup: PodGroup, now: datetime) -> WaitReason | None:
    condition = _current_condition(podgroup)
    if condition is None or condition.get("type") != PODGROUP_UNSCHEDULABLE:
        return None
    message = str(condition.get("message") or "")
    if not message or _says_nothing(message):
        return None
    return WaitReason(
        f"PodGroup {Meta(podgroup).name} is {_phase(podgroup) or 'not scheduled yet'}",
        str(condition.get("reason") or PODGROUP_UNSCHEDULABLE),
        message,
        parse_time(condition.get("lastTransitionTime")) or now,
    )


def _from_events(podgroup: PodGroup, events: Iterable[Mapping[str, Any]], now: datetime) -> WaitReason | None:
    uid = Meta(podgroup).uid
    newest: tuple[float, Mapping[str, Any]] | None = None
    for event in events:
        involved = mapping(event.get("involvedObject"))
        if involved.get("uid") != uid or event.get("reason") != PODGROUP_UNSCHEDULABLE:
            continue
        message = str(event.get("message") or "")
        if not message or _says_nothing(message):
            continue
        key = _newest_first(parse_time(event.get("lastTimestamp") or event.get("eventTime")))
        if newest is None or key >= newest[0]:
            newest = (key, event)
    if newest is None:
        return None
    event = newest[1]
    since = parse_time(event.get("firstTimestamp") or event.get("eventTime")) or now
    return WaitReason(
        f"PodGroup {Meta(podgroup).name} is {_phase(podgroup) or 'not scheduled yet'}",
        PODGROUP_UNSCHEDULABLE,
        str(event.get("message") or ""),
        since,
    )


def _from_pods(pods: Sequence[Mapping[str, Any]], now: datetime) -> WaitReason | None:
    for pod in sorted(pods, key=lambda pod: Meta(pod).name):
        if Meta(pod).deleting or mapping(pod.get("status")).get("phase") not in (None, "", "Pending"):
            continue
        conditions = mapping(pod.get("status")).get("conditions")
        for condition in conditions if isinstance(conditions, list) else ():
            condition = mapping(condition)
            if (
                condition.get("type") == POD_SCHEDULED
                and condition.get("status") == "False"
                and condition.get("reason") == POD_UNSCHEDULABLE
                and condition.get("message")
            ):
                return WaitReason(
                    f"pod {Meta(pod).name} is unschedulable",
                    POD_UNSCHEDULABLE,
                    str(condition["message"]),
                    parse_time(condition.get("lastTransitionTime")) or now,
                )
    return None


def why_waiting(
    podgroup: PodGroup | None,
    podgroup_events: Iterable[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    now: datetime,
    grace: float,
) -> Waiting:
    """The reason a not-yet-running job waits, if one has held for ``grace`` seconds."""
    found: WaitReason | None = None
    if podgroup is not None and not Meta(podgroup).deleting and _phase(podgroup) in PHASES_WAITING:
        found = _from_condition(podgroup, now)
        if found is None and _phase(podgroup) in PHASES_NOT_ADMITTED:
            found = _from_events(podgroup, podgroup_events, now)
    if found is None:
        found = _from_pods(pods, now)
    if found is None:
        return Waiting(None, None)
    remaining = (found.since + timedelta(seconds=grace) - now).total_seconds()
    if remaining > 0:
        return Waiting(None, remaining)
    return Waiting(found, None)


def created_message(job_name: str) -> str:
    """Upstream's Created message, which scripts match (upstream v1.9)."""
    return f"TFJob {job_name} is created."


def waiting_message(job_name: str, why: str) -> str:
    return bounded(f"{created_message(job_name)} Not running yet: {why}")


def refused_message(job_name: str, what: str, api_message: str) -> str:
    return bounded(f"{created_message(job_name)} {what} cannot be created: {api_message}")


def report_waiting(draft: Draft, job_name: str, waiting: Waiting) -> None:
    """Say in the Created condition why the job waits (or that it no longer does), and once, as a
    Warning event, each new reason of the gang; a reason still within its grace asks for a recheck.

    An unschedulable pod already has its Warning event, upstream's abnormal-pod one
    (``tfjob.planner.abnormal``), so only the condition says it again.
    """
    if waiting.recheck_in is not None:
        draft.requeue_in(waiting.recheck_in)
    found = waiting.reason
    message = waiting_message(job_name, found.text) if found else created_message(job_name)
    if draft.set_message(COND_CREATED, message) and found is not None and found.from_podgroup:
        draft.emit(WARNING, EVENT_PODGROUP_PENDING, found.text)


def unadmitted_pod_status(status: JobStatus | None, job_name: str, why: str, now: datetime) -> JobStatus:
    """The stored ``status`` with the Created condition's reason ``AdmissionWebhookMissing``.

    The controller writes it when a pod it created came back without the mutating webhook's marks
    (and deleted it): ``why`` says which pod and what to fix. The reason changes in place, so the
    ``State`` column keeps showing the newest condition; a finished job is left as it is. The next
    pass whose creates all go through puts ``TFJobCreated`` back (``plan``).
    """
    draft = Draft.starting_from(status, now)
    if is_finished(draft.conditions):
        return draft.status
    message = bounded(f"{created_message(job_name)} Not running yet: {why}")
    if find_condition(draft.conditions, COND_CREATED) is None:
        draft.set_condition(COND_CREATED, TRUE, REASON_ADMISSION_WEBHOOK_MISSING, message)
    else:
        draft.set_reason(COND_CREATED, REASON_ADMISSION_WEBHOOK_MISSING, message)
    return draft.status


def refused_creation_status(
    status: JobStatus | None, job_name: str, what: str, api_message: str, now: datetime
) -> JobStatus:
    """The stored ``status`` with the Created condition saying the API refused to create ``what``.

    The controller writes it when a pod or service create is refused (quota, a webhook, an
    invalid template): such a pass writes no planned status, as its actions did not all happen,
    so without this the API's reason would reach the controller's log only. Only the Created
    condition changes (added if missing); a finished job is left as it is. The next pass whose
    creates all succeed puts the plain message back.
    """
    draft = Draft.starting_from(status, now)
    if is_finished(draft.conditions):
        return draft.status
    message = refused_message(job_name, what, api_message)
    if find_condition(draft.conditions, COND_CREATED) is None:
        draft.set_condition(COND_CREATED, TRUE, REASON_CREATED, message)
    else:
        draft.set_message(COND_CREATED, message)
    return draft.status
