"""One Volcano session over the gangs: enqueue, allocate all-or-nothing, then close with statuses.

- enqueue: PodGroups in phase ``""``/``Pending`` are admitted (``Inqueue``) per ``enqueue.py``;
- allocate: for admitted gangs, pending tasks are placed one by one (binpack scoring) on a scratch
  copy of the node ledger, in Volcano's task order (priority, then the index that ends a pod's
  name, then creation, then uid). A task that fits nowhere stops the gang as Volcano's
  ``NeedContinueAllocating`` does: always when ``minMember`` is every task; when roles are checked,
  once a failed role has fewer placed than its ``minTaskMember``; otherwise once the tasks left
  could no longer make ``minMember``. When it goes on, the later tasks of the failed role are
  skipped with Volcano's "has already predicated failed" error (its predicate cache by role).
  The placements are committed (the pods bound) only if the gang then has ``minMember`` ready
  tasks and, when ``minMember`` covers the sum of ``minTaskMember``, each role its minimum;
  otherwise they are discarded, so a gang never starts partially, nor without a role it needs;
- invalid gangs: fewer pods of a role than its ``minTaskMember`` (when roles are checked), or
  fewer valid pods than ``minMember``, are not allocated at all (Volcano's gang ``JobValid``);
  Volcano only logs that verdict (``NotEnoughPodsOfTask``), the PodGroup condition says
  ``NotEnoughResources`` as for any gang that is not ready;
- network topology: a gang whose PodGroup has ``networkTopology`` is placed inside one HyperNode
  of a tier up to ``highestTierAllowed``, lowest tiers first (its bound pods' nodes must be in it);
  ``hard`` leaves it pending when none has room (each pod's fit error is prefixed
  ``In hyperNode <name>:`` as Volcano's is), ``soft`` falls back to any nodes;
- preempt (Volcano's ``gangpreempt``, simplified): an admitted gang that still cannot start takes
  the room of whole lower-priority gangs, lowest priority (then newest) first, as few as make it
  fit. Their bound and running pods are evicted as Volcano's evictor does (``DisruptionTarget``
  with reason ``PreemptionByScheduler``, ``Ready=False``, a Warning ``Evict`` event, a graceful
  delete); the preemptor is bound in a later session, once they are gone. Pods already being
  deleted count as free, so a preemption in flight is not repeated. Only gangs of the
  preemptor's own queue, as Volcano's ``preempt``: across queues Volcano ``reclaim``s (a queue
  above its deserved share gives room back, whatever the priorities), which the sandbox does
  not do. One preemptor per session;
- close: phase, counters and the ``Unschedulable``/``Scheduled`` condition per PodGroup, the pods'
  ``PodScheduled=False`` conditions and the events Volcano records.

Gangs are served in priority order, then oldest first, and each commit is visible to the next gang.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cmp_to_key
from typing import Final

from kubeobjects.volcano import PodGroupPhase
from sandbox.scheduler import podgroupstatus as pgs
from sandbox.scheduler.decisions import (
    Bind,
    EventNote,
    Evict,
    PodCondition,
    PodGroupStatusWrite,
    PodUnschedulable,
    SessionResult,
)
from sandbox.scheduler.enqueue import EnqueueAccount
from sandbox.scheduler.ledger import Ledger
from sandbox.scheduler.placement import Placement, binpack_score
from sandbox.scheduler.resources import add, insufficient, subtract
from sandbox.scheduler.snapshot import OCCUPYING, HyperNodeInfo, JobInfo, Snapshot, TaskInfo, TaskStatus

PODGROUP_API_VERSION: Final = "scheduling.volcano.sh/v1beta1"
SCHEDULABLE: Final = "Schedulable"
UNSCHEDULABLE: Final = "Unschedulable"
FAILED_SCHEDULING: Final = "FailedScheduling"
_AWAITING_ADMISSION: Final = frozenset({"", PodGroupPhase.PENDING})
"""Phases of a gang that enqueue has not admitted yet."""
PREEMPTED_REASON: Final = "PreemptionByScheduler"
PREEMPTED_MESSAGE: Final = "volcano: preempting to accommodate a higher priority pod"
_HOLDING: Final = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
_VALID: Final = frozenset({TaskStatus.PENDING, TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.SUCCEEDED})


@dataclass(frozen=True)
class GangConfig:
    overcommit_factor: float = 1.2


@dataclass(frozen=True)
class _Attempt:
    """The outcome of trying one gang: per task either a node or the reason it has none."""

    placed: dict[str, str]
    failed: dict[str, str]
    committed: bool


def _job_order(job: JobInfo) -> tuple[int, str, str, str]:
    return (-job.priority, job.created, job.namespace, job.name)


def _pod_index(name: str) -> int | None:
    """The index that ends a pod's name of three parts or more (``job-worker-3``), as Volcano reads it."""
    parts = name.split("-")
    if len(parts) < 3:
        return None
    try:
        return int(parts[-1])
    except ValueError:
        return None


def _compare_tasks(left: TaskInfo, right: TaskInfo) -> int:
    """Volcano's task order: higher priority first, then the lower name index, then the older pod,
    then the lower uid (its ``priority`` plugin, then ``helpers.CompareTask``)."""
    if left.priority != right.priority:
        return -1 if left.priority > right.priority else 1
    left_index, right_index = _pod_index(left.name), _pod_index(right.name)
    if left_index is not None and right_index is not None and left_index != right_index:
        return -1 if left_index < right_index else 1
    if left.created != right.created:
        return -1 if left.created < right.created else 1
    return -1 if left.uid < right.uid else (1 if left.uid > right.uid else 0)


_task_order = cmp_to_key(_compare_tasks)


def short_roles(job: JobInfo, roles: Iterable[str]) -> tuple[tuple[str, int, int], ...]:
    """The roles whose count in ``roles`` is below their minimum, when Volcano checks roles at all."""
    if not job.checks_roles:
        return ()
    counts = Counter(roles)
    return tuple(
        (role, counts.get(role, 0), need)
        for role, need in sorted(job.min_task_member.items())
        if counts.get(role, 0) < need
    )


def _skipped(task: TaskInfo) -> str:
    """Volcano's fit error for a task whose role already failed its predicates this session."""
    return f"Task {task.name} with role spec {task.role} has already predicated failed, skip"


def _continue_after_failure(
    job: JobInfo, failed_roles: set[str], allocated: Counter[str], ready: int, left: Iterable[TaskInfo]
) -> bool:
    """Volcano's ``NeedContinueAllocating``, once a task fitted nowhere: whether the tasks
    ``left`` (pending, not tried yet) could still make the gang ready."""
    if job.min_member == len(job.tasks):
        return False
    if not job.checks_roles:
        untried = sum(1 for task in left if task.role not in failed_roles)
        return ready + untried >= job.min_member
    return all(allocated[role] >= job.min_task_member.get(role, 0) for role in failed_roles)


def _try_allocate(job: JobInfo, ledger: Ledger, hypernodes: Sequence[HyperNodeInfo] = ()) -> _Attempt:
    """Place the gang; with a network topology, inside one HyperNode of an allowed tier, trying
    the lowest tiers first (soft: anywhere when none has room)."""
    topology = job.network_topology
    pending = any(task.status is TaskStatus.PENDING for task in job.tasks)
    if topology is None or not pending:
        return _try_in(job, ledger, None)
    tier = topology.allowed_tier(hypernodes)
    holding = {t.node_name for t in job.tasks if t.node_name and t.status in OCCUPYING}
    domains = [
        h
        for h in hypernodes
        if (tier is None or h.tier <= tier)
        and holding <= h.nodes
        and h.nodes
        and (holding or _has_room_for(job, ledger, h))
    ]
    first: tuple[HyperNodeInfo, _Attempt] | None = None
    for domain in domains:
        attempt = _try_in(job, ledger, domain.nodes)
        if attempt.committed:
            return attempt
        first = first or (domain, attempt)
    if not topology.hard:
        return _try_in(job, ledger, None)
    if first is None:
        return _Attempt({}, {}, False)
    domain, attempt = first
    failed = {uid: f"In hyperNode {domain.name}: {reason}" for uid, reason in attempt.failed.items()}
    return replace(attempt, failed=failed)


def _has_room_for(job: JobInfo, ledger: Ledger, domain: HyperNodeInfo) -> bool:
    """Whether ``domain``'s idle resources cover the gang's ``minResources``: the
    network-topology-aware plugin tries no other HyperNode (unless the gang already holds some)."""
    if not job.min_resources:
        return True
    idle: dict[str, int] = {}
    for node in ledger.nodes:
        if node.name in domain.nodes:
            free = subtract(node.allocatable, ledger.used.get(node.name, {}))
            idle = add(idle, {name: max(0, amount) for name, amount in free.items()})
    return not insufficient(job.min_resources, idle)


def _try_in(job: JobInfo, ledger: Ledger, only: frozenset[str] | None) -> _Attempt:
    valid = [task for task in job.tasks if task.status in _VALID]
    pending = sorted((t for t in job.tasks if t.status is TaskStatus.PENDING), key=_task_order)
    if short_roles(job, (task.role for task in valid)) or len(valid) < job.min_member or not pending:
        return _Attempt({}, {}, False)  # Volcano's JobValid fails, or nothing to place: skipped
    ready_before = pgs.ready_count(t.status for t in job.tasks)
    allocated = Counter(t.role for t in job.tasks if pgs.is_ready(t.status))
    scratch = ledger.fork(only)
    placed: dict[str, str] = {}
    failed: dict[str, str] = {}
    failed_roles: set[str] = set()
    for position, task in enumerate(pending):
        if task.role and task.role in failed_roles:
            failed[task.uid] = _skipped(task)
            continue
        outcome = scratch.place(task, binpack_score, volcano=True)
        if not isinstance(outcome, Placement):
            failed[task.uid] = outcome
            failed_roles.add(task.role)
            left = pending[position + 1 :]
            if not _continue_after_failure(job, failed_roles, allocated, ready_before + len(placed), left):
                break  # the rest could not complete the gang anyway; Volcano stops here too
            continue
        scratch.commit(task, outcome.node)
        placed[task.uid] = outcome.node
        allocated[task.role] += 1
    ready = ready_before + len(placed)
    ready_roles = [t.role for t in job.tasks if pgs.is_ready(t.status) or t.uid in placed]
    if ready >= job.min_member and not short_roles(job, ready_roles):
        for task in pending:
            if task.uid in placed:
                ledger.commit(task, placed[task.uid])
        return _Attempt(placed, failed, True)
    return _Attempt(placed, failed, False)


def choose_victims(preemptor: JobInfo, jobs: Iterable[JobInfo], ledger: Ledger) -> list[JobInfo] | None:
    """The lower-priority gangs whose eviction lets ``preemptor`` start: [] when what is already
    being released is enough (wait for it), None when no choice is."""
    trial = ledger.fork()
    others = [job for job in jobs if job.key != preemptor.key]
    for job in others:
        for task in job.tasks:
            if task.status is TaskStatus.RELEASING:
                trial.release(task)
    if _try_allocate(preemptor, trial.fork()).committed:
        return []
    lower = [
        job
        for job in others
        if job.queue == preemptor.queue
        and job.priority < preemptor.priority
        and any(t.status in _HOLDING for t in job.tasks)
    ]
    newest_first = sorted(lower, key=lambda job: (job.created, job.key), reverse=True)
    candidates = sorted(newest_first, key=lambda job: job.priority)  # stable: newest first per priority
    victims: list[JobInfo] = []
    for victim in candidates:
        for task in victim.tasks:
            if task.status in _HOLDING:
                trial.release(task)
        victims.append(victim)
        if _try_allocate(preemptor, trial.fork()).committed:
            return victims
    return None


def _evictions(victims: Iterable[JobInfo]) -> list[Evict]:
    return [
        Evict(task.namespace, task.name, task.uid, PREEMPTED_REASON, PREEMPTED_MESSAGE, "preempt")
        for job in victims
        for task in job.tasks
        if task.status in _HOLDING
    ]


def _event(job: JobInfo, type_: str, reason: str, message: str) -> EventNote:
    return EventNote(
        PODGROUP_API_VERSION, "PodGroup", job.namespace, job.name, job.uid, type_, reason, message
    )


def _pod_event(task: TaskInfo, reason: str, message: str) -> EventNote:
    return EventNote.about_pod(task, "Warning", reason, message)


def pod_unschedulable(task: TaskInfo, reason: str, message: str, now: str) -> PodUnschedulable | None:
    """The ``PodScheduled=False`` write, or None when the pod already says exactly that."""
    old = task.scheduled_condition or {}
    if (old.get("status"), old.get("reason"), old.get("message")) == ("False", reason, message):
        return None
    condition = PodCondition(
        type="PodScheduled",
        status="False",
        lastProbeTime=None,
        lastTransitionTime=now,
        reason=reason,
        message=message,
    )
    if old.get("status") == "False" and old.get("lastTransitionTime"):
        condition["lastTransitionTime"] = str(old["lastTransitionTime"])
    return PodUnschedulable(task.namespace, task.name, task.uid, condition)


def schedule_gangs(
    snapshot: Snapshot, ledger: Ledger, now: str, session_id: str, config: GangConfig = GangConfig()
) -> SessionResult:
    jobs = sorted((job for job in snapshot.jobs if job.queue in snapshot.queues), key=_job_order)
    account = EnqueueAccount(snapshot.nodes, jobs, config.overcommit_factor)
    events: list[EventNote] = []
    binds: list[Bind] = []
    pod_conditions: list[PodUnschedulable] = []
    writes: list[PodGroupStatusWrite] = []
    admitted: list[JobInfo] = []
    starving: list[JobInfo] = []
    stored_phase = {job.key: job.phase for job in jobs}
    for job in jobs:
        if job.phase in _AWAITING_ADMISSION:
            verdict = account.judge(job, snapshot.queues[job.queue])
            if verdict.admitted:
                account.admit(job)
                job = replace(job, phase=PodGroupPhase.INQUEUE)
            else:
                events.append(_event(job, "Normal", UNSCHEDULABLE, verdict.message))
        admitted.append(job)

    for job in admitted:
        # Only a gang still waiting for admission is skipped (Volcano's allocate skips Pending jobs).
        attempt = (
            _try_allocate(job, ledger, snapshot.hypernodes)
            if job.phase not in _AWAITING_ADMISSION
            else _Attempt({}, {}, False)
        )
        statuses = [
            TaskStatus.BOUND if attempt.committed and task.uid in attempt.placed else task.status
            for task in job.tasks
        ]
        if attempt.committed:
            binds.extend(
                Bind(t.namespace, t.name, t.uid, attempt.placed[t.uid])
                for t in job.tasks
                if t.uid in attempt.placed
            )
        ready = pgs.ready_count(statuses)
        gang_ready = ready >= job.min_member
        pending_tasks = [t for t, s in zip(job.tasks, statuses, strict=True) if s is TaskStatus.PENDING]
        if not gang_ready and pending_tasks and job.phase not in _AWAITING_ADMISSION:
            starving.append(job)
        reasons: dict[str, tuple[str, str]] = {}
        for task in pending_tasks:
            if task.uid in attempt.failed:
                reasons[task.uid] = (UNSCHEDULABLE, attempt.failed[task.uid])
            elif task.uid in attempt.placed:
                node = attempt.placed[task.uid]
                message = (
                    f"Pod {task.namespace}/{task.name} can possibly be assigned to {node}, "
                    "once minAvailable is satisfied"
                )
                reasons[task.uid] = (SCHEDULABLE, message)
        fit = pgs.fit_error(
            statuses, job.min_member, [reasons.get(t.uid, (UNSCHEDULABLE, ""))[0] for t in pending_tasks]
        )
        origin = next((t for t in sorted(pending_tasks, key=_task_order) if t.uid in attempt.failed), None)
        if origin is not None:
            fit = f"{fit}. Origin reason is {origin.name}: {attempt.failed[origin.uid]}"

        condition = None
        if job.tasks:
            if gang_ready:
                condition = pgs.scheduled_condition(now, session_id)
            else:
                # Volcano's gang plugin counts the tasks it could place, even in a discarded attempt.
                schedulable = sum(1 for reason, _ in reasons.values() if reason == SCHEDULABLE)
                unready = job.min_member - ready - schedulable
                job_message = f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {fit}"
                condition = pgs.unschedulable_condition(job_message, now, session_id)
        unschedulable_now = bool(job.tasks) and not gang_ready
        phase = pgs.compute_phase(job.phase, job.min_member, statuses, unschedulable_now)
        conditions = pgs.merge_conditions(job.conditions, condition)
        status = pgs.build_status(phase, conditions, statuses)
        old_scheduled = [c for c in job.conditions if c.get("type") == pgs.SCHEDULED_TYPE]
        if (
            phase != stored_phase[job.key]
            or [pgs.as_condition(c) for c in job.conditions] != conditions
            or any(job.counters.get(k, 0) != status.get(k, 0) for k in ("running", "succeeded", "failed"))
        ):
            writes.append(PodGroupStatusWrite(job.namespace, job.name, job.uid, status))
        if gang_ready and job.tasks and not old_scheduled:
            events.append(_event(job, "Normal", pgs.SCHEDULED_TYPE, pgs.POD_GROUP_READY))
        if phase in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE, PodGroupPhase.UNKNOWN):
            message = f"{len(pending_tasks)}/{len(job.tasks)} tasks in gang unschedulable: {fit}"
            events.append(_event(job, "Warning", UNSCHEDULABLE, message))
        for task in pending_tasks:
            if gang_ready and task.uid not in attempt.failed:
                continue
            reason, message = reasons.get(task.uid, (UNSCHEDULABLE, fit))
            update = pod_unschedulable(task, reason, message, now)
            if update is not None:
                pod_conditions.append(update)
            events.append(_pod_event(task, FAILED_SCHEDULING, message))
    evictions: list[Evict] = []
    for preemptor in starving:
        victims = choose_victims(preemptor, admitted, ledger)
        if victims:
            evictions = _evictions(victims)
            break
        if victims == []:
            break  # enough is already being released for the first in line: wait for it
    return SessionResult(tuple(binds), tuple(pod_conditions), tuple(writes), tuple(events), tuple(evictions))
