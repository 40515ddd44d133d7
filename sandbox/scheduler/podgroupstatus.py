"""PodGroup status as Volcano writes it at the close of a session: phase, counters, conditions.

Rules (Volcano's session close, as its scheduler writes them), applied in order each session:

1. some pods Running and the gang was unschedulable this session -> ``Unknown``;
2. scheduled pods (bound, running, releasing, succeeded, failed) >= minMember -> ``Running``, or
   ``Completed`` when every scheduled pod has finished;
3. otherwise ``Pending``, except that ``Inqueue`` stays ``Inqueue`` (only enqueue promotes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from kubeobjects.volcano import PodGroupPhase
from sandbox.scheduler.decisions import PodGroupCondition, PodGroupStatus
from sandbox.scheduler.snapshot import TaskStatus

UNSCHEDULABLE_TYPE: Final = "Unschedulable"
SCHEDULED_TYPE: Final = "Scheduled"
NOT_ENOUGH_RESOURCES: Final = "NotEnoughResources"
GANG_READY_REASON: Final = "tasks in gang are ready to be scheduled"
POD_GROUP_NOT_READY: Final = "pod group is not ready"
POD_GROUP_READY: Final = "pod group is ready"

_SCHEDULED: Final = frozenset(
    {TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.SUCCEEDED, TaskStatus.FAILED}
)
_READY: Final = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.SUCCEEDED})


def is_ready(status: TaskStatus) -> bool:
    return status in _READY


def ready_count(statuses: Iterable[TaskStatus]) -> int:
    """Tasks that count toward the gang being ready (Volcano's ReadyTaskNum)."""
    return sum(1 for status in statuses if status in _READY)


def compute_phase(
    current: str, min_member: int, statuses: Sequence[TaskStatus], unschedulable_now: bool
) -> PodGroupPhase:
    if unschedulable_now and any(s is TaskStatus.RUNNING for s in statuses):
        return PodGroupPhase.UNKNOWN
    scheduled = [s for s in statuses if s in _SCHEDULED]
    if len(scheduled) >= min_member:
        if all(s in (TaskStatus.SUCCEEDED, TaskStatus.FAILED) for s in scheduled):
            return PodGroupPhase.COMPLETED
        return PodGroupPhase.RUNNING
    return PodGroupPhase.INQUEUE if current == PodGroupPhase.INQUEUE else PodGroupPhase.PENDING


def histogram(items: Iterable[str]) -> str:
    """Volcano's ``"3 Pending, 4 minAvailable"``: counts, then names, sorted as strings."""
    return ", ".join(sorted(f"{count} {name}" for name, count in Counter(items).items()))


def fit_error(statuses: Sequence[TaskStatus], min_member: int, pending_reasons: Sequence[str]) -> str:
    """``pod group is not ready, 3 Pending, 3 minAvailable; Pending: 3 Unschedulable``."""
    counts = Counter(status.value for status in statuses)
    counts["minAvailable"] = min_member
    parts = sorted(f"{count} {name}" for name, count in counts.items())
    message = f"{POD_GROUP_NOT_READY}, {', '.join(parts)}"
    if pending_reasons:
        message += f"; {TaskStatus.PENDING.value}: {histogram(pending_reasons)}"
    return message


def unschedulable_condition(
    message: str, now: str, session_id: str, reason: str = NOT_ENOUGH_RESOURCES
) -> PodGroupCondition:
    return PodGroupCondition(
        type=UNSCHEDULABLE_TYPE,
        status="True",
        transitionID=session_id,
        lastTransitionTime=now,
        reason=reason,
        message=message,
    )


def scheduled_condition(now: str, session_id: str) -> PodGroupCondition:
    return PodGroupCondition(
        type=SCHEDULED_TYPE,
        status="True",
        transitionID=session_id,
        lastTransitionTime=now,
        reason=GANG_READY_REASON,
        message="",
    )


def _same(old: PodGroupCondition, new: PodGroupCondition) -> bool:
    return (old["type"], old["status"], old["reason"], old["message"]) == (
        new["type"],
        new["status"],
        new["reason"],
        new["message"],
    )


def as_condition(raw: Mapping[str, Any]) -> PodGroupCondition:
    return PodGroupCondition(
        type=str(raw.get("type") or ""),
        status=str(raw.get("status") or ""),
        transitionID=str(raw.get("transitionID") or ""),
        lastTransitionTime=str(raw.get("lastTransitionTime") or ""),
        reason=str(raw.get("reason") or ""),
        message=str(raw.get("message") or ""),
    )


def merge_conditions(
    existing: Sequence[Mapping[str, Any]], update: PodGroupCondition | None
) -> list[PodGroupCondition]:
    """Replace the condition of ``update``'s type; an unchanged one keeps its old time and id."""
    merged: list[PodGroupCondition] = []
    replaced = False
    for raw in existing:
        old = as_condition(raw)
        if update is not None and old["type"] == update["type"]:
            merged.append(old if _same(old, update) else update)
            replaced = True
        else:
            merged.append(old)
    if update is not None and not replaced:
        merged.append(update)
    return merged


def build_status(
    phase: str, conditions: list[PodGroupCondition], statuses: Sequence[TaskStatus]
) -> PodGroupStatus:
    """The full status; zero counters are left out, as Volcano's ``omitempty`` does."""
    status = PodGroupStatus(phase=phase)
    if conditions:
        status["conditions"] = conditions
    counts = Counter(statuses)
    for key, task_status in (
        ("running", TaskStatus.RUNNING),
        ("succeeded", TaskStatus.SUCCEEDED),
        ("failed", TaskStatus.FAILED),
    ):
        if counts[task_status]:
            status[key] = counts[task_status]  # type: ignore[literal-required]
    return status
