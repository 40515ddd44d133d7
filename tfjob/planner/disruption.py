"""Pods that end because of a disruption, and the whole-gang restart (docs/behaviour.md, D18).

A pod is disrupted when

* it has a True ``DisruptionTarget`` condition: preemption by a scheduler (Volcano's evictor and
  kube-scheduler write it before they delete), eviction through the API, node shutdown or loss
  (newer Kubernetes releases write it); the condition's reason names the disruption; or
* it is being deleted, its index is in range, and tfgang did not delete it: tfgang deletes a
  running pod only to scale down, finish, suspend or restart a gang, and a Failed pod only when
  its restartPolicy restarts it. So a terminating pod that is not Failed, or Failed under a policy
  that does not restart it and not by a permanent exit code (1-127), was deleted by someone else:
  reason ``PodDeleted``. (kube-apiserver v1.20's Eviction API writes no condition; this catches it.)

A disruption is not the program's failure: it never counts toward ``backoffLimit`` and never fails
the job. What follows depends on ``JobFacts.gang_restart``:

* per replica (a job with PS, or the annotation ``false``): the disrupted pod is deleted if it is
  not already going, and its index is recreated like a lost pod. ``status.disruptions`` goes up by
  one for each disrupted pod, once: ``status.disruptedPods`` remembers the pods already counted
  (name and uid) until they are gone. A pod evicted or preempted by someone else is already
  terminating when tfgang first sees it and stays visible for several passes; a controller that
  restarts meanwhile reads the memory back from the status, so nothing counts twice. The memory
  holds only pods that still exist, at most one per replica index;
* gang restart (no PS, or the annotation ``true``): every pod is deleted, ``status.gangRestart``
  records the pod and the reason, ``status.disruptions`` goes up by one and the job shows
  ``Restarting`` with the disruption's reason. While ``status.gangRestart`` is present no pod is
  created and nothing counts as a failure; once every pod is gone, the gang waits for Volcano to
  admit it again (the PodGroup goes back to ``Pending`` when its pods are gone and to ``Inqueue``
  when enqueue admits it: a phase of ``Running`` or ``Unknown`` with no pods is the old gang's), then
  ``status.gangRestart`` is removed and every pod is created in the same pass. The marker itself
  is what counts the restart once, whatever it finds disrupted on the way.

A job that finishes (fails by its deadline or its gang timeout during a restart, say) keeps
``status.disruptions`` as history and loses ``gangRestart`` and ``disruptedPods``: nothing is in
progress any more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeobjects.meta import Body, Meta, mapping, scalar_text
from kubeobjects.pods import PodPhase
from tfjob.constants import POD_CONDITION_DISRUPTION_TARGET, REASON_POD_DELETED
from tfjob.facts import JobFacts, ReplicaFacts
from tfjob.planner.exitcodes import tensorflow_exit_code
from tfjob.planner.observed import pod_phase
from tfjob.wire import DisruptedPod, GangRestart, JobStatus


@dataclass(frozen=True)
class Disruption:
    pod: str
    reason: str
    message: str
    uid: str = ""


def disruption_target(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod's True ``DisruptionTarget`` condition, if it has one."""
    conditions = mapping(pod.get("status")).get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        condition = mapping(condition)
        if condition.get("type") == POD_CONDITION_DISRUPTION_TARGET and condition.get("status") == "True":
            return condition
    return None


def disruption_of(pod: Body, replica: ReplicaFacts, restarts_failed: bool) -> Disruption | None:
    """Why ``pod`` (in range for ``replica``) is ending by a disruption, or None.

    ``restarts_failed``: whether tfgang deletes the pod itself once it is Failed (its policy)."""
    meta = Meta(pod)
    phase = pod_phase(pod)
    if phase == PodPhase.SUCCEEDED:
        return None
    target = disruption_target(pod)
    if target is not None:
        reason = str(target.get("reason") or POD_CONDITION_DISRUPTION_TARGET)
        return Disruption(meta.name, reason, str(target.get("message") or ""), meta.uid)
    if not meta.deleting:
        return None
    if phase == PodPhase.FAILED:
        code = tensorflow_exit_code(pod)
        if restarts_failed or (code is not None and 1 <= code <= 127):
            return None  # tfgang's own restart, or the program's failure before anyone deleted it
    return Disruption(meta.name, REASON_POD_DELETED, f"pod {meta.name} was deleted", meta.uid)


def gang_restart_of(status: JobStatus) -> GangRestart | None:
    """The gang restart in progress, if any."""
    found = status.get("gangRestart")
    return found if isinstance(found, dict) else None


def recorded_disruptions(status: JobStatus) -> int:
    found = status.get("disruptions")
    return found if isinstance(found, int) and not isinstance(found, bool) and found > 0 else 0


def counted_pods(status: JobStatus) -> list[DisruptedPod]:
    """The disrupted pods already counted in ``status.disruptions`` (per replica), as recorded."""
    found = status.get("disruptedPods")
    counted: list[DisruptedPod] = []
    for raw in found if isinstance(found, list) else ():
        entry = mapping(raw)
        name, uid = scalar_text(entry.get("name")), scalar_text(entry.get("uid"))
        if name:
            counted.append(DisruptedPod(name=name, uid=uid))
    return counted


def count_disruptions(status: JobStatus, pods: Sequence[Body], found: Sequence[Disruption]) -> None:
    """Raise ``status.disruptions`` by each pod in ``found`` not counted yet, and remember in
    ``status.disruptedPods`` the counted pods that still exist (``pods``: the job's pods now).

    A pod is known by name and uid: the pod that replaces it at its index has the same name and a
    new uid, and counts when it is disrupted in its turn. Pass no ``found`` to only forget the
    pods that are gone (a gang restart counts itself)."""
    existing = {(Meta(pod).name, Meta(pod).uid) for pod in pods}
    kept = [entry for entry in counted_pods(status) if (entry["name"], entry["uid"]) in existing]
    known = {(entry["name"], entry["uid"]) for entry in kept}
    new = [DisruptedPod(name=d.pod, uid=d.uid) for d in found if (d.pod, d.uid) not in known]
    if new:
        status["disruptions"] = recorded_disruptions(status) + len(new)
    if kept or new:
        status["disruptedPods"] = kept + new
    else:
        status.pop("disruptedPods", None)


def end_disruptions_in_progress(status: JobStatus) -> None:
    """A finished job restarts and replaces nothing more: the gang restart marker and the memory
    of counted pods go; the count stays, as history."""
    status.pop("gangRestart", None)
    status.pop("disruptedPods", None)


def replacing_message(facts: JobFacts, disruption: Disruption) -> str:
    detail = f": {disruption.message}" if disruption.message else ""
    return (
        f"TFJob {facts.qualified_name} replaces pod {disruption.pod}, disrupted "
        f"({disruption.reason}){detail}; not counted toward backoffLimit"
    )


def first_disruption(found: Sequence[Disruption]) -> Disruption | None:
    """The disruption that names a gang restart: a DisruptionTarget one before a bare deletion,
    then by pod name, so every pass names the same one."""
    ranked = sorted(found, key=lambda d: (d.reason == REASON_POD_DELETED, d.pod))
    return ranked[0] if ranked else None
