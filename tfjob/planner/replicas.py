"""What each replica index needs, read from the observed pods of one replica type (upstream v1.9
with decisions D2, D4, D5).

For the single pod at an index:

* index out of range (scale-down) -> delete it; it is not a failure (D4);
* a deletionTimestamp -> it is going away: neither active nor a failure (D4). Once it is gone
  the index is empty and a new pod is created, like a lost pod;
* phase Failed -> by the replica restartPolicy: ``OnFailure``/``Always`` and ``ExitCode`` with a
  retryable exit code (D9) restart it (delete, recreate on a later pass); ``ExitCode`` with a
  permanent code fails the job with its own message; ``Never`` (and any unknown policy) is a
  permanent failure that fails the job in the status decision;
* no pod -> create one, if the index is in range.

A disrupted pod (``tfjob.planner.disruption``: a True ``DisruptionTarget`` condition, or deleted
by someone else) is neither active nor a failure, whatever its phase: it is listed in
``disruptions``, and in ``disrupted`` when it still has to be deleted; its index is recreated
once it is gone, and nothing counts toward backoffLimit.

Counting for ``replicaStatuses``: Running without deletionTimestamp -> active; Succeeded ->
succeeded; Failed -> failed (a pod being deleted for a restart still shows as failed until it is
gone); Pending, Unknown and terminating Running pods -> nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kubeobjects.meta import Body, Meta
from kubeobjects.pods import PodPhase
from tfjob.constants import RESTART_ALWAYS, RESTART_EXIT_CODE, RESTART_NEVER, RESTART_ON_FAILURE
from tfjob.facts import ReplicaFacts
from tfjob.planner.disruption import Disruption, disruption_of
from tfjob.planner.exitcodes import effective_exit_code, is_retryable_exit_code
from tfjob.planner.observed import (
    ReplicaSlices,
    pod_phase,
    restart_count,
)
from tfjob.wire import ReplicaStatus

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReplicaCounts:
    active: int = 0
    succeeded: int = 0
    failed: int = 0

    def as_status(self) -> ReplicaStatus:
        """The wire form: zero counts are left out, as upstream's omitempty does."""
        status = ReplicaStatus()
        if self.active:
            status["active"] = self.active
        if self.succeeded:
            status["succeeded"] = self.succeeded
        if self.failed:
            status["failed"] = self.failed
        return status


@dataclass(frozen=True)
class ReplicaAnalysis:
    """What one replica type's pods need this pass; nothing here has been acted on yet."""

    replica: ReplicaFacts
    missing: tuple[int, ...]  # in-range indices without a pod
    scale_down: tuple[Body, ...]  # out-of-range pods to delete
    restarts: tuple[Body, ...]  # Failed pods to delete and recreate
    exit_code_failures: tuple[Body, ...]  # ExitCode pods that failed with a permanent code
    permanent_failures: tuple[Body, ...]  # Failed pods whose policy does not restart them
    terminating_failed: int  # Failed pods already on their way out (a restart in flight)
    counts: ReplicaCounts
    running_restarts: int  # in-place restarts of Running pods, for backoffLimit
    active_pods: tuple[Body, ...]
    disruptions: tuple[Disruption, ...] = ()  # in-range pods ending by a disruption
    disrupted: tuple[Body, ...] = ()  # those of them not yet being deleted

    @property
    def rtype(self) -> str:
        return self.replica.rtype

    @property
    def restart_in_progress(self) -> bool:
        return bool(self.restarts) or self.terminating_failed > 0


def restarts_failed_pod(policy: str, pod: Body) -> bool:
    """Whether a pod in phase Failed is deleted and recreated under its replica restartPolicy."""
    if policy in (RESTART_ON_FAILURE, RESTART_ALWAYS):
        return True
    if policy == RESTART_EXIT_CODE:
        return is_retryable_exit_code(effective_exit_code(pod))
    return False


def analyse_replica(replica: ReplicaFacts, slices: ReplicaSlices) -> ReplicaAnalysis:
    missing: list[int] = []
    scale_down: list[Body] = []
    restarts: list[Body] = []
    exit_code_failures: list[Body] = []
    permanent_failures: list[Body] = []
    active_pods: list[Body] = []
    terminating_failed = 0
    active = succeeded = failed = running_restarts = 0
    disruptions: list[Disruption] = []
    disrupted: list[Body] = []
    for index in slices.duplicated_indices():
        logger.warning("too many pods for %s index %d; leaving them alone", replica.rtype, index)
    for index in range(slices.size):
        found = slices.at(index)
        if not found:
            if index < replica.replicas:
                missing.append(index)
            continue
        if len(found) > 1:
            continue
        pod = found[0]
        phase = pod_phase(pod)
        terminating = Meta(pod).deleting
        disruption = (
            disruption_of(pod, replica, restarts_failed_pod(replica.restart_policy, pod))
            if index < replica.replicas
            else None
        )
        if disruption is not None:
            disruptions.append(disruption)
            if not terminating:
                disrupted.append(pod)
            continue
        if phase == PodPhase.RUNNING and not terminating:
            active += 1
            if replica.restart_policy != RESTART_NEVER:
                running_restarts += restart_count(pod)
        elif phase == PodPhase.SUCCEEDED:
            succeeded += 1
        elif phase == PodPhase.FAILED:
            failed += 1
        if phase not in (PodPhase.SUCCEEDED, PodPhase.FAILED) and not terminating:
            active_pods.append(pod)
        if index >= replica.replicas:
            if not terminating:
                scale_down.append(pod)
            continue
        if phase != PodPhase.FAILED:
            continue
        if terminating:
            terminating_failed += 1
        elif restarts_failed_pod(replica.restart_policy, pod):
            restarts.append(pod)
        elif replica.restart_policy == RESTART_EXIT_CODE:
            exit_code_failures.append(pod)
        else:
            permanent_failures.append(pod)
    return ReplicaAnalysis(
        replica=replica,
        missing=tuple(missing),
        scale_down=tuple(scale_down),
        restarts=tuple(restarts),
        exit_code_failures=tuple(exit_code_failures),
        permanent_failures=tuple(permanent_failures),
        terminating_failed=terminating_failed,
        counts=ReplicaCounts(active, succeeded, failed),
        running_restarts=running_restarts,
        active_pods=tuple(active_pods),
        disruptions=tuple(disruptions),
        disrupted=tuple(disrupted),
    )
