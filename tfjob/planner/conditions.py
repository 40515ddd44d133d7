"""Job conditions: the update rules of upstream v1.9 as pure functions over condition lists.

The list is history: a new condition is appended at the end (the ``State`` printer column shows
the last entry), and the rules below keep it consistent:

1. a True ``Failed`` condition is absorbing: nothing changes afterwards;
2. a condition of the same type, status and reason leaves the list untouched (message and
   timestamps are not refreshed, so repeated passes write nothing);
3. same type and status with a new reason keeps the old ``lastTransitionTime``;
4. otherwise the old entry of that type is dropped and the new one appended; ``Running`` and
   ``Restarting`` drop each other, and ``Succeeded``/``Failed`` turn a present ``Running`` to
   ``False`` without touching its reason, message or timestamps.

So ``Running`` and ``Restarting`` are never both present.
"""

from __future__ import annotations

from collections.abc import Sequence

from tfjob.constants import (
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
)
from tfjob.wire import JobCondition

TRUE = "True"
FALSE = "False"
TERMINAL_TYPES = (COND_SUCCEEDED, COND_FAILED)


def new_condition(type_: str, status: str, reason: str, message: str, timestamp: str) -> JobCondition:
    return JobCondition(
        type=type_,
        status=status,
        reason=reason,
        message=message,
        lastUpdateTime=timestamp,
        lastTransitionTime=timestamp,
    )


def find_condition(conditions: Sequence[JobCondition], type_: str) -> JobCondition | None:
    for condition in conditions:
        if condition.get("type") == type_:
            return condition
    return None


def is_true(conditions: Sequence[JobCondition], type_: str) -> bool:
    condition = find_condition(conditions, type_)
    return condition is not None and condition.get("status") == TRUE


def is_finished(conditions: Sequence[JobCondition]) -> bool:
    return any(is_true(conditions, type_) for type_ in TERMINAL_TYPES)


def set_condition(conditions: Sequence[JobCondition], update: JobCondition) -> list[JobCondition]:
    """The condition list after ``update`` under the rules in the module docstring."""
    current = list(conditions)
    if is_true(current, COND_FAILED):
        return current
    type_ = update.get("type")
    existing = find_condition(current, type_ or "")
    if existing is not None and existing.get("status") == update.get("status"):
        if existing.get("reason") == update.get("reason"):
            return current
        kept_transition = existing.get("lastTransitionTime")
        update = JobCondition(**update)
        if kept_transition is not None:
            update["lastTransitionTime"] = kept_transition
    result: list[JobCondition] = []
    for condition in current:
        other = condition.get("type")
        if other == type_:
            continue
        if type_ == COND_RUNNING and other == COND_RESTARTING:
            continue
        if type_ == COND_RESTARTING and other == COND_RUNNING:
            continue
        if type_ in TERMINAL_TYPES and other == COND_RUNNING:
            condition = JobCondition(**condition)
            condition["status"] = FALSE
        result.append(condition)
    result.append(update)
    return result


def with_message(
    conditions: Sequence[JobCondition], type_: str, message: str, timestamp: str
) -> list[JobCondition]:
    """The list with the ``type_`` condition's message replaced (and ``lastUpdateTime`` moved).

    Status, reason and ``lastTransitionTime`` stay: the condition still holds, only what it says
    about the job changed (the Created condition saying why the job has not started).
    """
    result: list[JobCondition] = []
    for condition in conditions:
        if condition.get("type") == type_ and condition.get("message") != message:
            condition = JobCondition(**condition)
            condition["message"] = message
            condition["lastUpdateTime"] = timestamp
        result.append(condition)
    return result


def with_reason(
    conditions: Sequence[JobCondition], type_: str, reason: str, message: str, timestamp: str
) -> list[JobCondition]:
    """The list with the ``type_`` condition's reason and message replaced where it stands.

    Unlike ``set_condition`` the entry keeps its place (the ``State`` column shows the last entry,
    which a changed reason of an older condition must not move) and its ``lastTransitionTime``.
    """
    result: list[JobCondition] = []
    for condition in conditions:
        if condition.get("type") == type_ and (
            condition.get("reason") != reason or condition.get("message") != message
        ):
            condition = JobCondition(**condition)
            condition["reason"] = reason
            condition["message"] = message
            condition["lastUpdateTime"] = timestamp
        result.append(condition)
    return result


def last_condition_type(conditions: Sequence[JobCondition]) -> str:
    """What ``kubectl get tfjob`` shows in the ``State`` column: the type of the last entry."""
    return conditions[-1].get("type", "") if conditions else ""
