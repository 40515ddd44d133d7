"""Finishing a job and tearing down its children: the finished path (upstream v1.9), suspend
and resume (upstream v1.9), and the failures that delete everything (D3).

A finished job (Succeeded or Failed True) is final (D6): later passes only clean up its pods
by ``cleanPodPolicy``, delete its PodGroup, fold ``active`` into ``succeeded`` after a success,
and delete the job once ``ttlSecondsAfterFinished`` has passed. Deletions are only asked for
while the object still exists and is not already terminating, so repeated passes add nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from kubeobjects.meta import Body, Meta
from kubeobjects.pods import PodPhase
from kubeobjects.times import parse_time
from tfjob.constants import (
    CLEAN_POD_POLICY_NONE,
    CLEAN_POD_POLICY_RUNNING,
    COND_CREATED,
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
    COND_SUSPENDED,
    EVENT_JOB_TERMINATED,
    REASON_RESUMED,
    REASON_SCHEDULE_TIMEOUT,
    REASON_SUSPENDED,
)
from tfjob.facts import JobFacts
from tfjob.planner.actions import NORMAL, DeleteJob, DeletePod, DeletePodGroup, DeleteService
from tfjob.planner.conditions import FALSE, TRUE, find_condition, is_true
from tfjob.planner.disruption import count_disruptions, end_disruptions_in_progress
from tfjob.planner.draft import COUNTER_DELETED, COUNTER_FAILED, COUNTER_SUCCESSFUL, Draft
from tfjob.planner.limits import backoff_verdict, deadline_verdict
from tfjob.planner.observed import (
    Children,
    pod_phase,
)
from tfjob.planner.status import Verdict
from tfjob.planner.waiting import created_message
from tfjob.wire import PodGroup, ReplicaStatus

JOB_TERMINATED_MESSAGE = "Job has been terminated. Deleting PodGroup"


def finish_job(draft: Draft, verdict: Verdict, *, event_type: str = NORMAL) -> None:
    """Set the terminal condition, completionTime, the event and the counter of a finishing job;
    a gang restart or pod replacement in progress ends with it (D18)."""
    draft.set_condition(verdict.type, TRUE, verdict.reason, verdict.message)
    end_disruptions_in_progress(draft.status)
    draft.status.setdefault("completionTime", draft.timestamp)
    draft.emit(event_type, verdict.reason, verdict.message)
    draft.count(COUNTER_SUCCESSFUL if verdict.type == COND_SUCCEEDED else COUNTER_FAILED)


def delete_pods_and_services(draft: Draft, pods: Sequence[Body], services: Sequence[Body]) -> None:
    """Delete ``pods`` (unless already terminating) and every listed Service of the same name."""
    services_by_name = {Meta(service).name: service for service in services}
    for pod in pods:
        name = Meta(pod).name
        if not Meta(pod).deleting:
            draft.act(DeletePod(name, Meta(pod).uid))
        service = services_by_name.get(name)
        if service is not None and not Meta(service).deleting:
            draft.act(DeleteService(name, Meta(service).uid))


def delete_everything(draft: Draft, pods: Sequence[Body], services: Sequence[Body]) -> None:
    """Every pod and every Service of the job (D3 failures and suspend)."""
    delete_pods_and_services(draft, pods, [])
    for service in services:
        if not Meta(service).deleting:
            draft.act(DeleteService(Meta(service).name, Meta(service).uid))


def delete_podgroup(draft: Draft, podgroup: PodGroup | None, *, announce: bool = True) -> None:
    if podgroup is None or Meta(podgroup).deleting:
        return
    if announce:
        draft.emit(NORMAL, EVENT_JOB_TERMINATED, JOB_TERMINATED_MESSAGE)
    draft.act(DeletePodGroup(Meta(podgroup).name, Meta(podgroup).uid))


def pods_to_clean(clean_pod_policy: str, pods: Sequence[Body]) -> list[Body]:
    """The pods ``cleanPodPolicy`` deletes once the job finished; an unknown value acts as All."""
    if clean_pod_policy == CLEAN_POD_POLICY_NONE:
        return []
    if clean_pod_policy == CLEAN_POD_POLICY_RUNNING:
        return [pod for pod in pods if pod_phase(pod) in (PodPhase.RUNNING, PodPhase.PENDING)]
    return list(pods)


def fold_active_into_succeeded(draft: Draft) -> None:
    statuses = draft.status.get("replicaStatuses")
    if not isinstance(statuses, dict):
        return
    folded: dict[str, ReplicaStatus] = {}
    for rtype, entry in statuses.items():
        entry = ReplicaStatus(**entry) if isinstance(entry, dict) else ReplicaStatus()
        active = entry.pop("active", 0)
        if isinstance(active, int) and active > 0:
            entry["succeeded"] = int(entry.get("succeeded", 0) or 0) + active
        folded[rtype] = entry
    draft.status["replicaStatuses"] = folded


def cleanup_finished(draft: Draft, facts: JobFacts, children: Children) -> None:
    """The finished path: cleanPodPolicy, PodGroup deletion, the success fold and the TTL.

    A job torn down by a backoff, deadline or gang-timeout failure keeps being torn down on
    later passes, whatever its cleanPodPolicy: a deletion that failed in the failing pass is
    retried instead of leaving that child behind for good (D3). A restart marker an older
    version left on a finished job goes too (D18).
    """
    end_disruptions_in_progress(draft.status)
    if was_torn_down(draft, facts):
        delete_everything(draft, children.pods, children.services)
    else:
        cleaned = pods_to_clean(facts.clean_pod_policy, children.pods)
        delete_pods_and_services(draft, cleaned, children.services)
    delete_podgroup(draft, children.podgroup)
    if is_true(draft.conditions, COND_SUCCEEDED):
        fold_active_into_succeeded(draft)
    _expire_after_ttl(draft, facts)


def was_torn_down(draft: Draft, facts: JobFacts) -> bool:
    """Whether the job failed by one of the verdicts that delete every child (D3, D14)."""
    failed = find_condition(draft.conditions, COND_FAILED)
    if failed is None or failed.get("status") != TRUE:
        return False
    if failed.get("reason") == REASON_SCHEDULE_TIMEOUT:
        return True
    return failed.get("message") in (backoff_verdict(facts).message, deadline_verdict(facts).message)


def _expire_after_ttl(draft: Draft, facts: JobFacts) -> None:
    ttl = facts.ttl_seconds_after_finished
    if ttl is None:
        return
    completed = parse_time(draft.status.get("completionTime"))
    if completed is None:
        return  # nothing to measure from; upstream logs "job completion time is nil"
    remaining = (completed + timedelta(seconds=ttl) - draft.now).total_seconds()
    if remaining > 0:
        draft.requeue_in(remaining)
        return
    draft.act(DeleteJob(facts.name, facts.uid))
    draft.count(COUNTER_DELETED)


def fail_and_tear_down(
    draft: Draft, facts: JobFacts, verdict: Verdict, children: Children, *, event_type: str = NORMAL
) -> None:
    """Backoff, deadline and gang-timeout failures: the job fails and every child goes (D3)."""
    finish_job(draft, verdict, event_type=event_type)
    delete_everything(draft, children.pods, children.services)
    delete_podgroup(draft, children.podgroup)
    _expire_after_ttl(draft, facts)


def suspend(draft: Draft, facts: JobFacts, children: Children) -> None:
    """Suspended and not finished: no children, no active replicas, Running off, Suspended on."""
    delete_everything(draft, children.pods, children.services)
    delete_podgroup(draft, children.podgroup, announce=False)
    count_disruptions(draft.status, children.pods, ())  # forget the counted pods once they are gone
    statuses = draft.status.get("replicaStatuses")
    if isinstance(statuses, dict):
        idle: dict[str, ReplicaStatus] = {}
        for rtype, entry in statuses.items():
            entry = ReplicaStatus(**entry) if isinstance(entry, dict) else ReplicaStatus()
            entry.pop("active", None)
            idle[rtype] = entry
        draft.status["replicaStatuses"] = idle
    # A suspended job waits for nobody's scheduler: whatever the Created condition said goes.
    draft.set_message(COND_CREATED, created_message(facts.name))
    message = f"TFJob {facts.name} is suspended."
    running = find_condition(draft.conditions, COND_RUNNING)
    restarting = find_condition(draft.conditions, COND_RESTARTING)
    if (running is not None and running.get("status") == TRUE) or restarting is not None:
        # D5: nothing is being restarted while suspended, so Restarting goes with Running.
        draft.set_condition(COND_RUNNING, FALSE, REASON_SUSPENDED, message)
    if not is_true(draft.conditions, COND_SUSPENDED):
        draft.set_condition(COND_SUSPENDED, TRUE, REASON_SUSPENDED, message)
        draft.emit(NORMAL, REASON_SUSPENDED, message)


def resume_if_suspended(draft: Draft, facts: JobFacts) -> None:
    """Suspended no more: Suspended turns False and the job's clock restarts (startTime = now)."""
    if not is_true(draft.conditions, COND_SUSPENDED):
        return
    message = f"TFJob {facts.name} is resumed."
    draft.set_condition(COND_SUSPENDED, FALSE, REASON_RESUMED, message)
    draft.status["startTime"] = draft.timestamp
    draft.emit(NORMAL, REASON_RESUMED, message)
