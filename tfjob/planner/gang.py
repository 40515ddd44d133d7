"""Gang scheduling on a normal pass (upstream v1.9 with decisions D14 and D15).

The PodGroup is created before any pod. Under Volcano, pods and services are held back while
the PodGroup is missing or its phase is ``""`` or ``Pending``, and created once Volcano admits
the gang (Inqueue, Running, Unknown, Completed). scheduler-plugins never holds pods back. The
spec is patched only when ``podgroup_spec_patch`` finds a difference (D15).

``status.lastReconcileTime`` records when the current wait began: it is written on the first
held-back pass (and again only when a new wait begins after the job had started, i.e. when it is
older than ``startTime``), never on every held-back pass, so waiting costs no status writes.

D14: with ``schedulingPolicy.scheduleTimeoutSeconds``, a Volcano gang still not admitted that
many seconds after the wait began (the PodGroup's creation, normally) while the job has no pods
fails the job with reason ``TFJobScheduleTimeout``; the planner asks to be run at that moment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubeobjects.meta import Meta
from kubeobjects.times import parse_time
from kubeobjects.volcano import ADMITTED_PHASES, PodGroupPhase
from tfjob.constants import COND_FAILED, REASON_SCHEDULE_TIMEOUT
from tfjob.facts import JobFacts
from tfjob.planner.actions import CreatePodGroup, PatchPodGroup
from tfjob.planner.draft import Draft
from tfjob.planner.status import Verdict
from tfjob.podgroup import desired_podgroup, podgroup_spec_patch
from tfjob.settings import Settings
from tfjob.wire import JobStatus, PodGroup


@dataclass(frozen=True)
class GangGate:
    hold_back: bool = False  # create no pods or services this pass
    timed_out: Verdict | None = None  # D14: the gang was not admitted in time


def schedule_timeout_verdict(facts: JobFacts, seconds: int) -> Verdict:
    return Verdict(
        COND_FAILED,
        REASON_SCHEDULE_TIMEOUT,
        f"TFJob {facts.qualified_name} has failed because its PodGroup was not admitted by the gang "
        f"scheduler within scheduleTimeoutSeconds ({seconds}s).",
    )


def podgroup_phase(podgroup: PodGroup) -> str:
    status = podgroup.get("status")
    phase = status.get("phase") if isinstance(status, Mapping) else None
    return phase if isinstance(phase, str) else ""


def sync_gang(
    draft: Draft,
    facts: JobFacts,
    podgroup: PodGroup | None,
    pods: Sequence[Mapping[str, Any]],
    priority_values: Mapping[str, int],
    settings: Settings,
    *,
    readmitting: bool = False,
) -> GangGate:
    """Create or patch the PodGroup, and say whether pod creation must wait for it.

    ``readmitting``: a gang restart whose pods are all gone waits for Volcano to admit the gang
    again, i.e. for ``Inqueue``: ``Running``/``Unknown``/``Completed`` with no pods are what the
    PodGroup said about the old gang, before Volcano saw it empty."""
    if not settings.gang_enabled:
        return GangGate()
    desired = desired_podgroup(facts, priority_values, settings)
    if podgroup is None:
        draft.act(CreatePodGroup(desired))
    elif not Meta(podgroup).deleting:
        patch = podgroup_spec_patch(podgroup, desired)
        if patch is not None:
            draft.act(PatchPodGroup(Meta(podgroup).name, patch))
    wanted = frozenset({PodGroupPhase.INQUEUE}) if readmitting else ADMITTED_PHASES
    admitted = podgroup is not None and not Meta(podgroup).deleting and podgroup_phase(podgroup) in wanted
    if not settings.volcano or admitted:
        return GangGate()
    _mark_wait_start(draft)
    return GangGate(hold_back=True, timed_out=_schedule_timeout(draft, facts, podgroup, pods))


def gang_deadline(status: JobStatus, podgroup: PodGroup | None, timeout: int, now: datetime) -> datetime:
    """When a gang still not admitted fails the job (D14): ``timeout`` seconds after the wait began,
    the later of the recorded wait start (``now`` when none is recorded) and the PodGroup's creation."""
    starts = [parse_time(status.get("lastReconcileTime")) or now]
    if podgroup is not None:
        created = parse_time((podgroup.get("metadata") or {}).get("creationTimestamp"))
        if created is not None:
            starts.append(created)
    return max(starts) + timedelta(seconds=timeout)


def _mark_wait_start(draft: Draft) -> None:
    waiting_since = parse_time(draft.status.get("lastReconcileTime"))
    started = parse_time(draft.status.get("startTime"))
    if waiting_since is None or (started is not None and waiting_since < started):
        draft.status["lastReconcileTime"] = draft.timestamp


def _schedule_timeout(
    draft: Draft, facts: JobFacts, podgroup: PodGroup | None, pods: Sequence[Mapping[str, Any]]
) -> Verdict | None:
    timeout = facts.schedule_timeout_seconds
    if timeout is None or timeout < 0 or pods:
        return None
    deadline = gang_deadline(draft.status, podgroup, timeout, draft.now)
    remaining = (deadline - draft.now).total_seconds()
    if remaining > 0:
        draft.requeue_in(remaining)
        return None
    return schedule_timeout_verdict(facts, timeout)
