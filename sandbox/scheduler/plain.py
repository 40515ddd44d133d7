"""The plain scheduler for pods that are not Volcano's: one pod at a time, least-allocated node.

Pods that fit nowhere get ``PodScheduled=False`` (reason ``Unschedulable``) and a
``FailedScheduling`` event with kube-scheduler's wording.
"""

from __future__ import annotations

from collections.abc import Sequence

from sandbox.scheduler.decisions import Bind, EventNote, PodUnschedulable, SessionResult
from sandbox.scheduler.gang import FAILED_SCHEDULING, UNSCHEDULABLE, pod_unschedulable
from sandbox.scheduler.ledger import Ledger
from sandbox.scheduler.placement import Placement, least_allocated_score
from sandbox.scheduler.snapshot import SchedulerName, TaskInfo


def schedule_plain(tasks: Sequence[TaskInfo], ledger: Ledger, now: str) -> SessionResult:
    binds: list[Bind] = []
    conditions: list[PodUnschedulable] = []
    events: list[EventNote] = []
    for task in tasks:
        outcome = ledger.place(task, least_allocated_score, volcano=False)
        if isinstance(outcome, Placement):
            ledger.commit(task, outcome.node)
            binds.append(Bind(task.namespace, task.name, task.uid, outcome.node, SchedulerName.DEFAULT))
            continue
        update = pod_unschedulable(task, UNSCHEDULABLE, outcome, now)
        if update is not None:
            conditions.append(update)
        events.append(EventNote.about_pod(task, "Warning", FAILED_SCHEDULING, outcome, SchedulerName.DEFAULT))
    return SessionResult(binds=tuple(binds), pod_conditions=tuple(conditions), events=tuple(events))
