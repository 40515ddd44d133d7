"""The run limits that fail a job before its pods are reconciled: backoffLimit (upstream v1.9 with
D2), activeDeadlineSeconds (upstream v1.9 with D1).

backoffLimit, D2. The restarts that count are

    in-place restarts: the ``restartCount`` of every container and init container of each pod in
        phase Running (not terminating), for replica types whose restartPolicy is not ``Never``
  + recreations: ``status.restartCounts[type]``, which the planner raises by one for every Failed
        pod it deletes to recreate (OnFailure, Always, retryable ExitCode), summed over types.

The job fails when that sum reaches ``backoffLimit`` (any restart at all when the limit is 0),
checked at the start of every pass. Recreations are kept in the job's status, so they survive
controller restarts and are not reset when a pod is replaced, which is why ExitCode restarts now
honour the limit (upstream kubeflow/trainer#2045). As upstream, a newly Failed pod fails the job at
once when the limit is 0 and not every replica is active.

activeDeadlineSeconds, D1: measured from ``status.startTime``; the planner asks to be run again at
the deadline, so a quiet job fails on time instead of at its next event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from tfjob.constants import COND_FAILED, REASON_FAILED
from tfjob.facts import JobFacts
from tfjob.planner.replicas import ReplicaAnalysis
from tfjob.planner.status import Verdict
from tfjob.wire import JobStatus


def backoff_verdict(facts: JobFacts) -> Verdict:
    return Verdict(
        COND_FAILED,
        REASON_FAILED,
        f"Job {facts.name} has failed because it has reached the specified backoff limit",
    )


def deadline_verdict(facts: JobFacts) -> Verdict:
    return Verdict(
        COND_FAILED,
        REASON_FAILED,
        f"Job {facts.name} has failed because it was active longer than specified deadline",
    )


def recorded_recreations(status: JobStatus) -> int:
    counts = status.get("restartCounts")
    if not isinstance(counts, Mapping):
        return 0
    return sum(value for value in counts.values() if isinstance(value, int) and value > 0)


def _recorded_failed(statuses: object) -> int:
    if not isinstance(statuses, Mapping):
        return 0
    total = 0
    for entry in statuses.values():
        value = entry.get("failed") if isinstance(entry, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool):
            total += value
    return total


def counted_restarts(status: JobStatus, analyses: Iterable[ReplicaAnalysis]) -> int:
    """The restarts that count toward backoffLimit (D2): in-place ones plus recorded recreations."""
    return sum(analysis.running_restarts for analysis in analyses) + recorded_recreations(status)


def past_backoff_limit(facts: JobFacts, status: JobStatus, analyses: Iterable[ReplicaAnalysis]) -> bool:
    limit = facts.backoff_limit
    if limit is None:
        return False
    analyses = list(analyses)
    restarts = counted_restarts(status, analyses)
    if restarts >= limit if limit > 0 else restarts > 0:
        return True
    if limit > 0:
        return False
    failed_now = sum(analysis.counts.failed for analysis in analyses)
    new_failure = failed_now > _recorded_failed(status.get("replicaStatuses"))
    active = sum(len(analysis.active_pods) for analysis in analyses)
    return new_failure and active != facts.total_replicas


def deadline_at(facts: JobFacts, start_time: datetime | None) -> datetime | None:
    if facts.active_deadline_seconds is None or start_time is None:
        return None
    return start_time + timedelta(seconds=facts.active_deadline_seconds)
