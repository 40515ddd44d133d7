"""How far a job is from the limits that would fail it, read with the planner's own rules.

``kubectl tfjob status`` shows this, so it must count what the planner counts: restarts as
``past_backoff_limit`` does (D2), the deadline as ``deadline_at`` does (D1), and the gang timeout
as ``sync_gang`` does (D14). Nothing here decides anything; it is the planner's arithmetic, read out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from kubeobjects.times import parse_time
from kubeobjects.volcano import ADMITTED_PHASES
from tfjob.facts import read_facts
from tfjob.planner.conditions import is_finished
from tfjob.planner.gang import gang_deadline, podgroup_phase
from tfjob.planner.limits import counted_restarts, deadline_at
from tfjob.planner.observed import owned_by, slice_by_replica
from tfjob.planner.replicas import analyse_replica
from tfjob.settings import Settings
from tfjob.wire import JobStatus, PodGroup, TFJob


@dataclass(frozen=True)
class Progress:
    restarts: int  # what counts toward backoffLimit right now
    backoff_limit: int | None
    finished: bool
    # activeDeadlineSeconds: when the job fails (None: no deadline, or not started yet).
    deadline: datetime | None
    # scheduleTimeoutSeconds: when a gang still not admitted fails the job (None: not waiting on one).
    gang_deadline: datetime | None
    podgroup_phase: str  # "" when there is no PodGroup, or it has no phase yet
    gang_admitted: bool


def progress(
    job: TFJob,
    pods: Sequence[Mapping[str, Any]],
    podgroup: PodGroup | None,
    now: datetime,
    settings: Settings,
) -> Progress:
    """The limits of a stored job (raw) given its pods and PodGroup as listed, at ``now``."""
    facts = read_facts(job)
    status: JobStatus = cast(JobStatus, job.get("status")) if isinstance(job.get("status"), dict) else {}
    owned = [pod for pod in pods if owned_by(pod, facts)]
    analyses = [
        analyse_replica(replica, slice_by_replica(facts, owned, replica.rtype, replica.replicas))
        for replica in facts.replica_types
    ]
    finished = is_finished(status.get("conditions") or [])
    phase = podgroup_phase(podgroup) if podgroup is not None else ""
    admitted = podgroup is not None and phase in ADMITTED_PHASES
    waiting = settings.gang_enabled and settings.volcano and not admitted and not owned and not finished
    timeout = facts.schedule_timeout_seconds
    return Progress(
        restarts=counted_restarts(status, analyses),
        backoff_limit=facts.backoff_limit,
        finished=finished,
        deadline=None if finished else deadline_at(facts, parse_time(status.get("startTime"))),
        gang_deadline=(
            gang_deadline(status, podgroup, timeout, now)
            if waiting and timeout is not None and timeout >= 0
            else None
        ),
        podgroup_phase=phase,
        gang_admitted=admitted,
    )
