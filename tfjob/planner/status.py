"""The status decision of one normal pass (upstream v1.9, with decisions D5 and D6).

The replica types are walked in the fixed order Chief, Evaluator, Master, PS, Worker. For each:

* a job with a Chief/Master: only that type decides. Active -> Running; all its replicas
  succeeded -> Succeeded;
* otherwise only Worker decides: all workers succeeded, or worker 0 exited 0 under the default
  success policy -> Succeeded; else any worker active -> Running;
* a type with a pod being restarted -> Restarting (after the Running check, so a restarting
  worker shows Restarting, while a PS restart in a chief-less job is hidden by the running
  workers, as upstream);
* a type with a permanently failed pod -> Failed, unless it is a Worker of a job with
  ``enableDynamicWorker``.

D6: the walk stops at the first terminal verdict, so Succeeded and Failed never both appear.
D5: Restarting is only asserted while a pod of that type is being restarted (deleted for a
restart in this pass, or a Failed pod still terminating), and never hides a permanent failure:
a Failed pod under ``Never`` always fails the job, whatever conditions came before. Once no pod
is being restarted nothing re-asserts it; it stays the job's state only until the replacement
(or another pod of the deciding type) runs and ``Running`` takes its place, or the job ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubeobjects.pods import PodPhase
from tfjob.constants import (
    CHIEF,
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
    MASTER,
    REASON_FAILED,
    REASON_RESTARTING,
    REASON_RUNNING,
    REASON_SUCCEEDED,
    STATUS_ORDER,
    WORKER,
)
from tfjob.facts import JobFacts
from tfjob.planner.disruption import Disruption
from tfjob.planner.exitcodes import tensorflow_exit_code
from tfjob.planner.observed import ReplicaSlices, pod_phase
from tfjob.planner.replicas import ReplicaAnalysis


@dataclass(frozen=True)
class Verdict:
    """A condition to set: its type, reason and message."""

    type: str
    reason: str
    message: str


def running_verdict(facts: JobFacts) -> Verdict:
    return Verdict(COND_RUNNING, REASON_RUNNING, f"TFJob {facts.qualified_name} is running.")


def succeeded_verdict(facts: JobFacts) -> Verdict:
    return Verdict(COND_SUCCEEDED, REASON_SUCCEEDED, f"TFJob {facts.qualified_name} successfully completed.")


def restarting_verdict(facts: JobFacts, rtype: str) -> Verdict:
    return Verdict(
        COND_RESTARTING,
        REASON_RESTARTING,
        f"job {facts.name} is restarting because {rtype} replica(s) failed.",
    )


def gang_restart_verdict(facts: JobFacts, disruption: Disruption) -> Verdict:
    detail = f": {disruption.message}" if disruption.message else ""
    return Verdict(
        COND_RESTARTING,
        disruption.reason,
        f"TFJob {facts.qualified_name} is restarting as a gang because pod {disruption.pod} "
        f"was disrupted ({disruption.reason}){detail}",
    )


def replicas_failed_verdict(facts: JobFacts, rtype: str, failed: int) -> Verdict:
    return Verdict(
        COND_FAILED,
        REASON_FAILED,
        f"TFJob {facts.qualified_name} has failed because {failed} {rtype} replica(s) failed.",
    )


def exit_code_failed_verdict(facts: JobFacts, rtype: str) -> Verdict:
    return Verdict(
        COND_FAILED, REASON_FAILED, f'job "{facts.name}" is failing because "{rtype}" replica(s) failed.'
    )


@dataclass(frozen=True)
class Decision:
    terminal: Verdict | None  # Succeeded or Failed, when this pass finishes the job
    activity: Verdict | None  # Running or Restarting otherwise; None leaves the conditions as they are


def worker0_completed(facts: JobFacts, worker_slices: ReplicaSlices | None) -> bool:
    """Worker 0 succeeded with its tensorflow container exiting 0; true when there is no Worker."""
    if facts.replica(WORKER) is None or worker_slices is None:
        return facts.replica(WORKER) is None
    pod = worker_slices.single(0)
    return pod is not None and pod_phase(pod) == PodPhase.SUCCEEDED and tensorflow_exit_code(pod) == 0


def decide(facts: JobFacts, analyses: Mapping[str, ReplicaAnalysis], worker0_done: bool) -> Decision:
    activity: Verdict | None = None
    chief_job = facts.has_chief_or_master
    for rtype in STATUS_ORDER:
        analysis = analyses.get(rtype)
        if analysis is None:
            continue
        expected = analysis.replica.replicas - analysis.counts.succeeded
        running = analysis.counts.active
        if chief_job and rtype in (CHIEF, MASTER):
            if running > 0:
                activity = running_verdict(facts)
            if expected <= 0:
                return Decision(succeeded_verdict(facts), None)
        elif not chief_job and rtype == WORKER:
            if expected <= 0 or (worker0_done and not facts.success_all_workers):
                return Decision(succeeded_verdict(facts), None)
            if running > 0:
                activity = running_verdict(facts)
        if analysis.restart_in_progress:
            activity = restarting_verdict(facts, rtype)
        failed = len(analysis.permanent_failures)
        if failed > 0 and not (facts.dynamic_worker and rtype == WORKER):
            return Decision(replicas_failed_verdict(facts, rtype, failed), None)
    return Decision(None, activity)
