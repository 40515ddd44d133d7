"""The PodGroup of a gang-scheduled job (upstream v1.9, D11 and D15).

One PodGroup per job, named after it. ``minResources`` is what the scheduler must find free
before it admits the gang: the requests of the first ``minMember`` pods, taken in a fixed order
(PriorityClass value, then type) so the value never changes from one pass to the next.

``minTaskMember`` (Volcano only) is the per-role minimum, keyed as the webhook stamps each pod's
``volcano.sh/task-spec`` (``gang_annotations``: the replica type in lower case); see
``min_task_member`` for the rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from kubeobjects.meta import Meta, sequence
from kubeobjects.quantity import parse_quantity, sum_resources
from tfjob.constants import (
    CHIEF,
    DEFAULT_QUEUE,
    MASTER,
    MIN_RESOURCES_ORDER,
    PODGROUP_API_VERSION,
    PODGROUP_KIND,
    PS,
    WORKER,
)
from tfjob.defaults import canonical_replica_type
from tfjob.facts import JobFacts, ReplicaFacts
from tfjob.settings import Settings
from tfjob.wire import JSONDict, PodGroup

# scheduler-plugins' coscheduling PodGroup (upstream v1.9); not in tfjob.constants.
SCHEDULER_PLUGINS_PODGROUP_API_VERSION: Final = "scheduling.x-k8s.io/v1alpha1"


def min_member(facts: JobFacts) -> int:
    """``schedulingPolicy.minAvailable`` if set, else the total replicas over every type."""
    return facts.min_available if facts.min_available is not None else facts.total_replicas


# The roles a TF cluster cannot run without, whatever minAvailable says: the parameter servers
# hold the variables, the Chief/Master coordinates and checkpoints.
ESSENTIAL_TYPES: Final = (CHIEF, MASTER, PS)


# Maps patched key by key (a merge patch merges maps): a key no longer wanted is removed with null.
MAP_FIELDS: Final = ("minTaskMember", "networkTopology")


def task_spec_key(rtype: str) -> str:
    """The ``volcano.sh/task-spec`` value of a replica type's pods (``tfjob.pods.gang_annotations``)."""
    return rtype.lower()


def min_task_member(facts: JobFacts) -> dict[str, int]:
    """Volcano's per-role minimum, keyed by ``task_spec_key``; roles without replicas are left out.

    Without ``minAvailable`` (or with one not below the total), every role at its replicas, as
    Volcano's vcjob does for tasks without a minAvailable of their own. With ``minAvailable`` below
    the total, the essential roles (Chief, Master, PS) at their replicas, then Worker at what is
    left of ``minAvailable`` (if anything); Evaluator and unknown types get no minimum, so they
    never stand in for a worker. The sum is then ``minAvailable`` or less, the condition under which
    Volcano enforces the per-role minimums at all; essential roles that alone exceed
    ``minAvailable`` still appear, and Volcano then ignores the per-role check.
    """
    wanted: dict[str, int] = {}
    members = min_member(facts)
    if members >= facts.total_replicas:
        for replica in facts.replica_types:
            if replica.replicas > 0:
                wanted[task_spec_key(replica.rtype)] = replica.replicas
        return wanted
    essential = [r for r in facts.replica_types if canonical_replica_type(r.rtype) in ESSENTIAL_TYPES]
    for replica in essential:
        if replica.replicas > 0:
            wanted[task_spec_key(replica.rtype)] = replica.replicas
    left = members - sum(replica.replicas for replica in essential)
    worker = facts.replica(WORKER)
    if worker is not None and left > 0 and worker.replicas > 0:
        wanted[task_spec_key(worker.rtype)] = min(worker.replicas, left)
    return wanted


def min_resources(facts: JobFacts, min_member: int, priority_values: Mapping[str, int]) -> dict[str, str]:
    """The summed requests (else limits, per container) of the first ``min_member`` pods (D11).

    Types go highest PriorityClass value first (an unnamed or unknown class counts as 0); ties in
    the order Chief, Master, PS, Worker, Evaluator, then other types by name.
    """

    def order(replica: ReplicaFacts) -> tuple[int, int, str]:
        priority = _priority(replica, priority_values)
        canonical = canonical_replica_type(replica.rtype)
        rank = (
            MIN_RESOURCES_ORDER.index(canonical)
            if canonical in MIN_RESOURCES_ORDER
            else len(MIN_RESOURCES_ORDER)
        )
        return (-priority, rank, replica.rtype)

    pod_resources: list[Mapping[str, str | int | float]] = []
    remaining = max(min_member, 0)
    for replica in sorted(facts.replica_types, key=order):
        pods = min(replica.replicas, remaining)
        remaining -= pods
        per_pod = _pod_resources(replica.pod_spec)
        pod_resources.extend(resources for _ in range(pods) for resources in per_pod)
    return sum_resources(pod_resources)


def _priority(replica: ReplicaFacts, priority_values: Mapping[str, int]) -> int:
    """The value of the replica type's PriorityClass; an unnamed or unknown class counts as 0."""
    return priority_values.get(replica.priority_class_name, 0) if replica.priority_class_name else 0


def desired_podgroup(facts: JobFacts, priority_values: Mapping[str, int], settings: Settings) -> PodGroup:
    """The PodGroup the job needs: Volcano v1beta1, or scheduler-plugins v1alpha1 (upstream v1.9)."""
    if not settings.gang_enabled:
        raise ValueError("gang scheduling is off: a job has no PodGroup")
    members = min_member(facts)
    if facts.min_resources is not None:
        resources = facts.remembered("minResources", lambda: sum_resources([facts.min_resources or {}]))
    else:
        # The sum depends on the facts, minMember and the order the PriorityClasses give.
        priorities = tuple(_priority(replica, priority_values) for replica in facts.replica_types)
        resources = facts.remembered(
            ("minResources", members, priorities), lambda: min_resources(facts, members, priority_values)
        )
    metadata: JSONDict = {
        "name": facts.name,
        "namespace": facts.namespace,
        "ownerReferences": [dict(facts.owner_reference)],
    }
    annotations = Meta(facts.job).annotations
    if annotations:
        metadata["annotations"] = dict(annotations)

    spec: dict[str, Any]
    if settings.volcano:
        api_version = PODGROUP_API_VERSION
        spec = {
            "minMember": members,
            "queue": facts.queue or DEFAULT_QUEUE,
            "priorityClassName": facts.priority_class,
            "minResources": dict(resources),
        }
        task_members = facts.remembered("minTaskMember", lambda: min_task_member(facts))
        if task_members:
            spec["minTaskMember"] = dict(task_members)
        if facts.network_topology is not None:
            spec["networkTopology"] = dict(facts.network_topology)
    else:
        api_version = SCHEDULER_PLUGINS_PODGROUP_API_VERSION
        spec = {"minMember": members, "minResources": dict(resources)}
        if facts.schedule_timeout_seconds is not None:
            spec["scheduleTimeoutSeconds"] = facts.schedule_timeout_seconds
    return cast(
        PodGroup,
        {"apiVersion": api_version, "kind": PODGROUP_KIND, "metadata": metadata, "spec": spec},
    )


def podgroup_spec_patch(existing: PodGroup, desired: PodGroup) -> dict[str, Any] | None:
    """A JSON merge patch ``{"spec": {...}}`` of the fields that differ; None when none do (D15).

    An existing non-empty queue is kept (upstream does not move a gang between queues), and
    quantities are compared by value, so ``"1000m"`` equals ``"1"``.
    """
    current: Mapping[str, Any] = existing.get("spec") or {}
    wanted: dict[str, Any] = dict(desired.get("spec") or {})
    if "queue" in wanted and current.get("queue"):
        wanted["queue"] = current["queue"]
    patch: dict[str, Any] = {}
    if desired.get("apiVersion") == PODGROUP_API_VERSION:
        # A field no longer wanted at all goes as a whole: emptied key by key, networkTopology
        # would still be there for the CRD to default to a hard topology of any tier.
        patch.update({field: None for field in MAP_FIELDS if field in current and field not in wanted})
    for field, value in wanted.items():
        if field == "minResources":
            resources_patch = _resources_patch(current.get(field) or {}, value or {})
            if resources_patch is not None:
                patch[field] = resources_patch
        elif field in MAP_FIELDS:
            roles_patch = _map_patch(current.get(field), value or {})
            if roles_patch is not None:
                patch[field] = roles_patch
        elif _empty_if_none(current.get(field)) != _empty_if_none(value):
            patch[field] = value
    return {"spec": patch} if patch else None


def _resources_patch(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any] | None:
    # A merge patch merges maps key by key, so a resource no longer wanted is removed with null.
    patch: dict[str, Any] = {name: None for name in current if name not in wanted}
    for name, quantity in wanted.items():
        if name not in current or not _same_quantity(current[name], quantity):
            patch[name] = quantity
    return patch or None


def _map_patch(current: Any, wanted: Mapping[str, Any]) -> dict[str, Any] | None:
    # Roles no longer in the job are removed with null (Volcano #4802: a stale role blocks the gang).
    found: Mapping[str, Any] = current if isinstance(current, Mapping) else {}
    patch: dict[str, Any] = {name: None for name in found if name not in wanted}
    patch.update({name: count for name, count in wanted.items() if found.get(name) != count})
    return patch or None


def _same_quantity(left: Any, right: Any) -> bool:
    try:
        return parse_quantity(left) == parse_quantity(right)
    except ValueError:
        return bool(left == right)


def _empty_if_none(value: Any) -> Any:
    return "" if value is None else value


def _pod_resources(pod_spec: Mapping[str, Any]) -> list[Mapping[str, str | int | float]]:
    """Each container's requests, or its limits when it has no requests at all."""
    per_container: list[Mapping[str, str | int | float]] = []
    for container in sequence(pod_spec.get("containers")):
        resources = container.get("resources") if isinstance(container, dict) else None
        if not isinstance(resources, dict):
            continue
        requests = resources.get("requests")
        chosen = requests if requests is not None else resources.get("limits")
        if isinstance(chosen, dict):
            per_container.append(chosen)
    return per_container
