"""The PodGroup of a gang-scheduled job (reference §6.2, design D11 and D15).

One PodGroup per job, named after it. ``minResources`` is what the scheduler must find free
before it admits the gang: the requests of the first ``minMember`` pods, taken in a fixed order
(PriorityClass value, then type) so the value never changes from one pass to the next.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from kubeobjects.quantity import parse_quantity, sum_resources
from tfjob.constants import (
    DEFAULT_QUEUE,
    MIN_RESOURCES_ORDER,
    PODGROUP_API_VERSION,
    PODGROUP_KIND,
)
from tfjob.defaults import canonical_replica_type, with_defaults
from tfjob.naming import owner_reference
from tfjob.settings import Settings
from tfjob.wire import JSONDict, PodGroup, SchedulingPolicy, TFJob

# scheduler-plugins' coscheduling PodGroup (reference §6.2); not in tfjob.constants.
SCHEDULER_PLUGINS_PODGROUP_API_VERSION: Final = "scheduling.x-k8s.io/v1alpha1"


def min_member(job: TFJob) -> int:
    """``schedulingPolicy.minAvailable`` if set, else the total replicas over every type."""
    return _min_member(with_defaults(job))


def _min_member(defaulted: TFJob) -> int:
    min_available = _scheduling_policy(defaulted).get("minAvailable")
    if isinstance(min_available, int) and not isinstance(min_available, bool):
        return min_available
    return sum(_replica_count(spec) for spec in _replica_specs(defaulted).values())


def min_resources(job: TFJob, min_member: int, priority_values: Mapping[str, int]) -> dict[str, str]:
    """The summed requests (else limits, per container) of the first ``min_member`` pods (D11).

    Types go highest PriorityClass value first (an unnamed or unknown class counts as 0); ties in
    the order Chief, Master, PS, Worker, Evaluator, then other types by name.
    """
    return _min_resources(with_defaults(job), min_member, priority_values)


def _min_resources(defaulted: TFJob, min_member: int, priority_values: Mapping[str, int]) -> dict[str, str]:
    replica_specs = _replica_specs(defaulted)

    def order(key: str) -> tuple[int, int, str]:
        class_name = _pod_spec(replica_specs[key]).get("priorityClassName")
        priority = priority_values.get(class_name, 0) if isinstance(class_name, str) else 0
        canonical = canonical_replica_type(key)
        rank = (
            MIN_RESOURCES_ORDER.index(canonical)
            if canonical in MIN_RESOURCES_ORDER
            else len(MIN_RESOURCES_ORDER)
        )
        return (-priority, rank, key)

    pod_resources: list[Mapping[str, str | int | float]] = []
    remaining = max(min_member, 0)
    for key in sorted(replica_specs, key=order):
        pods = min(_replica_count(replica_specs[key]), remaining)
        remaining -= pods
        per_pod = _pod_resources(replica_specs[key])
        pod_resources.extend(resources for _ in range(pods) for resources in per_pod)
    return sum_resources(pod_resources)


def desired_podgroup(job: TFJob, priority_values: Mapping[str, int], settings: Settings) -> PodGroup:
    """The PodGroup the job needs: Volcano v1beta1, or scheduler-plugins v1alpha1 (reference §6.2)."""
    if not settings.gang_enabled:
        raise ValueError("gang scheduling is off: a job has no PodGroup")
    # Defaulted once here rather than in each helper: this runs on every pass of every job.
    defaulted = with_defaults(job)
    policy = _scheduling_policy(defaulted)
    members = _min_member(defaulted)
    explicit_resources = policy.get("minResources")
    resources = (
        sum_resources([explicit_resources])
        if isinstance(explicit_resources, dict)
        else _min_resources(defaulted, members, priority_values)
    )
    job_metadata = job.get("metadata") or {}
    metadata: JSONDict = {
        "name": job_metadata.get("name", ""),
        "namespace": job_metadata.get("namespace", ""),
        "ownerReferences": [dict(owner_reference(job))],
    }
    if job_metadata.get("annotations"):
        metadata["annotations"] = dict(job_metadata.get("annotations") or {})

    spec: dict[str, Any]
    if settings.volcano:
        api_version = PODGROUP_API_VERSION
        spec = {
            "minMember": members,
            "queue": policy.get("queue") or DEFAULT_QUEUE,
            "priorityClassName": policy.get("priorityClass") or "",
            "minResources": resources,
        }
    else:
        api_version = SCHEDULER_PLUGINS_PODGROUP_API_VERSION
        spec = {"minMember": members, "minResources": resources}
        timeout = policy.get("scheduleTimeoutSeconds")
        if isinstance(timeout, int) and not isinstance(timeout, bool):
            spec["scheduleTimeoutSeconds"] = timeout
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
    for field, value in wanted.items():
        if field == "minResources":
            resources_patch = _resources_patch(current.get(field) or {}, value or {})
            if resources_patch is not None:
                patch[field] = resources_patch
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


def _same_quantity(left: Any, right: Any) -> bool:
    try:
        return parse_quantity(left) == parse_quantity(right)
    except ValueError:
        return bool(left == right)


def _empty_if_none(value: Any) -> Any:
    return "" if value is None else value


def _scheduling_policy(job: TFJob) -> SchedulingPolicy:
    run_policy: Any = (job.get("spec") or {}).get("runPolicy") or {}
    policy = run_policy.get("schedulingPolicy") if isinstance(run_policy, dict) else None
    return cast(SchedulingPolicy, policy) if isinstance(policy, dict) else {}


def _replica_specs(job: TFJob) -> dict[str, JSONDict]:
    replica_specs: Any = (job.get("spec") or {}).get("tfReplicaSpecs") or {}
    if not isinstance(replica_specs, dict):
        return {}
    return {key: spec for key, spec in replica_specs.items() if isinstance(spec, dict)}


def _replica_count(spec: JSONDict) -> int:
    replicas = spec.get("replicas")
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        return 0
    return max(replicas, 0)


def _pod_spec(spec: JSONDict) -> JSONDict:
    template = spec.get("template")
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    return pod_spec if isinstance(pod_spec, dict) else {}


def _pod_resources(spec: JSONDict) -> list[Mapping[str, str | int | float]]:
    """Each container's requests, or its limits when it has no requests at all."""
    per_container: list[Mapping[str, str | int | float]] = []
    containers = _pod_spec(spec).get("containers")
    for container in containers if isinstance(containers, list) else []:
        resources = container.get("resources") if isinstance(container, dict) else None
        if not isinstance(resources, dict):
            continue
        requests = resources.get("requests")
        chosen = requests if requests is not None else resources.get("limits")
        if isinstance(chosen, dict):
            per_container.append(chosen)
    return per_container
