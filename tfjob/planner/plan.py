"""The reconcile planner: one pass from what was observed to what should be done (upstream v1.9
with decisions D1-D7, D10, D14, D15).

``plan`` is pure: the job, its pods, services and PodGroup, ``now`` and the settings go in; the
complete new status, the actions in order, the events, the metric increments and the time of
the next timer come out. The controller carries the actions out and writes the status only when
it differs from the stored one.

One pass, in order:

1. a job managed by another controller (``managedBy``) or being deleted -> nothing;
2. ``Created`` is added if missing;
3. finished (Succeeded/Failed True) -> cleanup only: cleanPodPolicy, PodGroup, TTL (D6);
4. suspended -> every child deleted, Running off, Suspended on; resumed -> Suspended off;
5. backoffLimit (D2) and activeDeadlineSeconds (D1) -> Failed, every pod and service deleted (D3);
   a disrupted pod never counts (D18), and in a job that restarts as a gang it starts (or
   continues) the whole-gang restart instead (``tfjob.planner.disruption``);
6. gang scheduling: PodGroup created/patched; pods held back until Volcano admits it (D14, D15);
   until the job runs, the Created condition says why it waits (``tfjob.planner.waiting``);
7. the status decision (Succeeded, Failed, Running, Restarting; D5, D6);
8. a finishing pass cleans up at once; otherwise restarts, scale-down, missing pods and services.

Status write budget. The status changes only when something observable changed, so a job of R
replicas whose pods change state together costs at most four writes from creation to Succeeded:

* pass 1: ``Created`` (+ ``lastReconcileTime`` while the PodGroup is not admitted) -> write 1;
  further held-back passes change nothing;
* PodGroup Inqueue: pods and services created, ``startTime`` and empty ``replicaStatuses`` ->
  write 2; passes while pods are Pending change nothing. (The controller's status writer holds
  write 1 back for a moment while the gang waits, ``controller.status``: a gang Volcano admits
  within it gets writes 1 and 2 as one);
* all pods Running: ``Running`` and the active counts -> write 3;
* worker 0 done: ``Succeeded``, ``completionTime``, the counts with active already folded into
  succeeded, and the cleanup actions, all in that one pass -> write 4. Later passes of the
  finished job change nothing.

A job that really waits (a reason that holds for ``pending_reason_grace_seconds``) costs one more
write when the reason appears, one per new reason, and its clearing rides on the write that
creates its pods or marks it Running.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from kubeobjects.jsonvalues import copy_json
from kubeobjects.meta import Body, Meta
from kubeobjects.times import parse_time
from tfjob.constants import (
    COND_CREATED,
    COND_RUNNING,
    EVENT_EXITED_WITH_CODE,
    EVENT_FAILED_CREATE_POD,
    EVENT_FAILED_CREATE_SERVICE,
    EVENT_SET_POD_TEMPLATE_RESTART_POLICY,
    EVENT_SET_POD_TEMPLATE_SCHEDULER_NAME,
    REASON_ADMISSION_WEBHOOK_MISSING,
    REASON_CREATED,
    REASON_RESTARTING,
    STATUS_ORDER,
    WORKER,
)
from tfjob.facts import JobFacts, read_facts
from tfjob.planner.abnormal import abnormal_pod_events
from tfjob.planner.actions import NORMAL, WARNING, CreatePod, CreateService, DeletePod, DeleteService
from tfjob.planner.cleanup import (
    cleanup_finished,
    fail_and_tear_down,
    finish_job,
    resume_if_suspended,
    suspend,
)
from tfjob.planner.conditions import TRUE, find_condition, is_finished, is_true
from tfjob.planner.disruption import (
    Disruption,
    count_disruptions,
    first_disruption,
    gang_restart_of,
    recorded_disruptions,
    replacing_message,
)
from tfjob.planner.draft import COUNTER_CREATED, COUNTER_FAILED_PODS, COUNTER_RESTARTED, Draft, Plan
from tfjob.planner.exitcodes import tensorflow_exit_code
from tfjob.planner.gang import sync_gang
from tfjob.planner.limits import backoff_verdict, deadline_at, deadline_verdict, past_backoff_limit
from tfjob.planner.observed import (
    Children,
    Observed,
    ReplicaSlices,
    owned_by,
    slice_by_replica,
)
from tfjob.planner.replicas import ReplicaAnalysis, analyse_replica
from tfjob.planner.status import (
    Decision,
    decide,
    exit_code_failed_verdict,
    gang_restart_verdict,
    restarting_verdict,
    worker0_completed,
)
from tfjob.planner.waiting import Waiting, created_message, report_waiting, why_waiting
from tfjob.pods import desired_pod, template_restart_policy_overridden
from tfjob.services import desired_service
from tfjob.settings import Settings
from tfjob.wire import TFJob

RESTART_POLICY_OVERRIDDEN_MESSAGE = (
    "Restart policy in pod template will be overwritten by restart policy in replica spec"
)
SCHEDULER_NAME_KEPT_MESSAGE = (
    "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten"
)


def managed_here(job: TFJob) -> bool:
    """Whether tfgang runs ``job`` at all (``JobFacts.managed_here``)."""
    return read_facts(job).managed_here


def _untouched(job: TFJob) -> Plan:
    status = job.get("status")
    return Plan(
        status=copy_json(status) if isinstance(status, dict) else {},
        actions=(),
        events=(),
        requeue_after=None,
        counters=(),
    )


def _reason(draft: Draft, type_: str) -> str | None:
    found = find_condition(draft.conditions, type_)
    return None if found is None else found.get("reason")


def plan(observed: Observed, now: datetime, settings: Settings) -> Plan:
    """One reconcile pass for ``observed.job``; ``now`` must be timezone-aware."""
    if now.tzinfo is None:
        raise ValueError("plan() needs a timezone-aware 'now'")
    raw = observed.job
    if not isinstance(raw, dict):
        raise ValueError(f"the observed job must be a TFJob object, not {type(raw).__name__}")
    facts = observed.facts if observed.facts is not None else read_facts(raw)
    if not facts.managed_here or facts.deleting:
        return _untouched(raw)
    draft = Draft.starting_from(raw.get("status"), now)
    if find_condition(draft.conditions, COND_CREATED) is None:
        draft.set_condition(COND_CREATED, TRUE, REASON_CREATED, created_message(facts.name))
        if find_condition(draft.conditions, COND_CREATED) is not None:  # not after a Failed one
            draft.count(COUNTER_CREATED)
    elif _reason(draft, COND_CREATED) == REASON_ADMISSION_WEBHOOK_MISSING:
        # Set by the controller when a pod came back unmutated (``unadmitted_pod_status``); this
        # status is written only if the pass's creates all go through, i.e. were admitted.
        draft.set_reason(COND_CREATED, REASON_CREATED, created_message(facts.name))
    children = Children(
        pods=[pod for pod in observed.pods if owned_by(pod, facts)],
        services=[service for service in observed.services if owned_by(service, facts)],
        podgroup=observed.podgroup if settings.gang_enabled else None,
    )
    if is_finished(draft.conditions):
        cleanup_finished(draft, facts, children)
        return draft.finish()
    if facts.suspend:
        suspend(draft, facts, children)
        return draft.finish()
    resume_if_suspended(draft, facts)
    _run_active_job(draft, facts, observed, children, settings)
    return draft.finish()


def _run_active_job(
    draft: Draft, facts: JobFacts, observed: Observed, children: Children, settings: Settings
) -> None:
    pods, services, podgroup = children.pods, children.services, children.podgroup
    pod_slices = {r.rtype: slice_by_replica(facts, pods, r.rtype, r.replicas) for r in facts.replica_types}
    analyses = {r.rtype: analyse_replica(r, pod_slices[r.rtype]) for r in facts.replica_types}
    for analysis in analyses.values():
        for event in abnormal_pod_events(analysis.active_pods):
            draft.emit(event.type, event.reason, event.message)

    restart = gang_restart_of(draft.status)
    disruptions = [found for analysis in analyses.values() for found in analysis.disruptions]
    restarting_gang = restart is not None or (bool(disruptions) and facts.gang_restart)
    # Per replica, every disrupted pod counts once; a gang restart counts itself once, below.
    count_disruptions(draft.status, pods, () if restarting_gang else disruptions)
    # A gang being restarted has no failures to count: its pods are going because tfgang said so.
    if not restarting_gang and past_backoff_limit(facts, draft.status, analyses.values()):
        fail_and_tear_down(draft, facts, backoff_verdict(facts), children)
        return
    deadline = deadline_at(facts, parse_time(draft.status.get("startTime")))
    if deadline is not None:
        if draft.now >= deadline:
            fail_and_tear_down(draft, facts, deadline_verdict(facts), children)
            return
        draft.requeue_in((deadline - draft.now).total_seconds())  # D1: a timer, not the next event

    if restarting_gang and not _restart_gang(draft, facts, observed, children, settings, disruptions):
        return
    gate = sync_gang(draft, facts, podgroup, pods, observed.priority_values, settings)
    if gate.timed_out is not None:
        fail_and_tear_down(draft, facts, gate.timed_out, children, event_type=WARNING)
        return
    if gate.hold_back:
        _say_why_waiting(draft, facts, observed, pods, settings)
        return

    if not draft.status.get("startTime"):
        draft.status["startTime"] = draft.timestamp
    _record_replica_counts(draft, analyses)
    decision = _decide(facts, analyses, pod_slices)
    if decision.terminal is not None:
        _finish_this_pass(draft, facts, decision, analyses, children)
        return
    for facts_replica in facts.replica_types:
        analysis = analyses[facts_replica.rtype]
        _reconcile_pods(draft, facts, analysis, settings)
        _reconcile_services(draft, facts, services, analysis)
    if decision.activity is not None:
        activity = decision.activity
        draft.set_condition(activity.type, TRUE, activity.reason, activity.message)
    _say_why_waiting(draft, facts, observed, pods, settings)
    if deadline is None:
        new_deadline = deadline_at(facts, parse_time(draft.status.get("startTime")))
        if new_deadline is not None:
            draft.requeue_in((new_deadline - draft.now).total_seconds())


def _restart_gang(
    draft: Draft,
    facts: JobFacts,
    observed: Observed,
    children: Children,
    settings: Settings,
    disruptions: Sequence[Disruption],
) -> bool:
    """One pass of a whole-gang restart (``tfjob.planner.disruption``); True once the gang is
    admitted again and every pod may be created in this pass."""
    if gang_restart_of(draft.status) is None:
        disruption = first_disruption(disruptions)
        assert disruption is not None
        draft.status["gangRestart"] = {"pod": disruption.pod, "reason": disruption.reason}
        draft.status["disruptions"] = recorded_disruptions(draft.status) + 1
        # The wait for re-admission is a new wait: D14's gang timeout counts from its start (the
        # first pass with the old pods gone), not from an earlier wait of this job.
        draft.status.pop("lastReconcileTime", None)
        verdict = gang_restart_verdict(facts, disruption)
        draft.set_condition(verdict.type, TRUE, verdict.reason, verdict.message)
        draft.emit(WARNING, REASON_RESTARTING, verdict.message)
        draft.count(COUNTER_RESTARTED)
    for pod in children.pods:
        if not Meta(pod).deleting:
            draft.act(DeletePod(Meta(pod).name, Meta(pod).uid))
    if children.pods:
        return False  # the old gang is still going away
    gate = sync_gang(
        draft, facts, children.podgroup, (), observed.priority_values, settings, readmitting=True
    )
    if gate.timed_out is not None:
        fail_and_tear_down(draft, facts, gate.timed_out, children, event_type=WARNING)
        return False
    if gate.hold_back:
        _say_why_waiting(draft, facts, observed, (), settings)
        return False
    draft.status.pop("gangRestart", None)
    return True


def _say_why_waiting(
    draft: Draft, facts: JobFacts, observed: Observed, pods: Sequence[Body], settings: Settings
) -> None:
    if is_true(draft.conditions, COND_RUNNING):
        waiting = Waiting(None, None)  # running: nothing to wait for, whatever a cache still says
    else:
        podgroup = observed.podgroup if settings.volcano else None
        grace = settings.pending_reason_grace_seconds
        waiting = why_waiting(podgroup, observed.podgroup_events, pods, draft.now, grace)
    report_waiting(draft, facts.name, waiting)


def _decide(
    facts: JobFacts, analyses: Mapping[str, ReplicaAnalysis], pod_slices: Mapping[str, ReplicaSlices]
) -> Decision:
    # A permanent ExitCode failure is found while the pods are reconciled, before the status
    # decision, so it is the first terminal verdict of the pass (D6).
    for rtype in (*STATUS_ORDER, *analyses):
        analysis = analyses.get(rtype)
        if analysis is not None and analysis.exit_code_failures:
            return Decision(exit_code_failed_verdict(facts, rtype), None)
    return decide(facts, analyses, worker0_completed(facts, pod_slices.get(WORKER)))


def _record_replica_counts(draft: Draft, analyses: Mapping[str, ReplicaAnalysis]) -> None:
    found = draft.status.get("replicaStatuses")
    statuses = dict(found) if isinstance(found, dict) else {}
    for rtype, analysis in analyses.items():
        statuses[rtype] = analysis.counts.as_status()
    draft.status["replicaStatuses"] = statuses


def _finish_this_pass(
    draft: Draft,
    facts: JobFacts,
    decision: Decision,
    analyses: Mapping[str, ReplicaAnalysis],
    children: Children,
) -> None:
    verdict = decision.terminal
    assert verdict is not None
    for analysis in analyses.values():
        for pod in (*analysis.exit_code_failures, *analysis.permanent_failures):
            _report_exit_code(draft, facts, pod)
    exit_code_failure = any(analysis.exit_code_failures for analysis in analyses.values())
    finish_job(draft, verdict, event_type=WARNING if exit_code_failure else NORMAL)
    cleanup_finished(draft, facts, children)


def _report_exit_code(draft: Draft, facts: JobFacts, pod: Body) -> None:
    code = tensorflow_exit_code(pod)
    if code is not None:
        draft.emit(
            NORMAL,
            EVENT_EXITED_WITH_CODE,
            f"Pod: {facts.namespace}.{Meta(pod).name} exited with code {code}",
        )


def _reconcile_pods(draft: Draft, facts: JobFacts, analysis: ReplicaAnalysis, settings: Settings) -> None:
    for pod in analysis.restarts:
        _report_exit_code(draft, facts, pod)
        draft.act(DeletePod(Meta(pod).name, Meta(pod).uid))
        draft.emit(WARNING, REASON_RESTARTING, restarting_verdict(facts, analysis.rtype).message)
        draft.count(COUNTER_RESTARTED)
        draft.count(COUNTER_FAILED_PODS)
        _count_recreation(draft, analysis.rtype)
    for pod in analysis.scale_down:
        draft.act(DeletePod(Meta(pod).name, Meta(pod).uid))
    why = {disruption.pod: disruption for disruption in analysis.disruptions}
    for pod in analysis.disrupted:
        draft.act(DeletePod(Meta(pod).name, Meta(pod).uid))
        draft.emit(WARNING, REASON_RESTARTING, replacing_message(facts, why[Meta(pod).name]))
    if not analysis.missing:
        return
    if template_restart_policy_overridden(analysis.replica):
        draft.emit(WARNING, EVENT_SET_POD_TEMPLATE_RESTART_POLICY, RESTART_POLICY_OVERRIDDEN_MESSAGE)
    scheduler = analysis.replica.scheduler_name
    if settings.gang_enabled and scheduler and scheduler != _gang_scheduler(settings):
        draft.emit(WARNING, EVENT_SET_POD_TEMPLATE_SCHEDULER_NAME, SCHEDULER_NAME_KEPT_MESSAGE)
    for index in analysis.missing:
        try:
            pod = desired_pod(facts, analysis.rtype, index)
        except ValueError as error:  # a template no pod can be built from: say so, keep going
            draft.emit(WARNING, EVENT_FAILED_CREATE_POD, f"Error creating: {error}")
            continue
        draft.act(CreatePod(pod))


def _gang_scheduler(settings: Settings) -> str:
    return settings.gang_scheduler_name.strip().lower() if settings.volcano else settings.gang_scheduler_name


def _count_recreation(draft: Draft, rtype: str) -> None:
    found = draft.status.get("restartCounts")
    counts = dict(found) if isinstance(found, dict) else {}
    previous = counts.get(rtype)
    counts[rtype] = (previous if isinstance(previous, int) and previous > 0 else 0) + 1
    draft.status["restartCounts"] = counts


def _reconcile_services(
    draft: Draft, facts: JobFacts, services: Sequence[Body], analysis: ReplicaAnalysis
) -> None:
    replica = analysis.replica
    slices = slice_by_replica(facts, services, replica.rtype, replica.replicas)
    for index in range(slices.size):
        found = slices.at(index)
        if not found and index < replica.replicas:
            try:
                service = desired_service(facts, replica.rtype, index)
            except ValueError as error:
                draft.emit(WARNING, EVENT_FAILED_CREATE_SERVICE, f"Error creating: {error}")
                continue
            draft.act(CreateService(service))
        elif len(found) == 1 and index >= replica.replicas and not Meta(found[0]).deleting:
            draft.act(DeleteService(Meta(found[0]).name, Meta(found[0]).uid))
