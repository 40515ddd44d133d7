"""Typed wire shapes: the JSON the API server stores for TFJobs, PodGroups and the pod fields we read.

These are TypedDicts over plain dicts, so objects go from the API to the domain and back without
conversion. Every key is optional (``total=False``) because the API server may omit any of them;
the domain reads with ``.get`` and applies defaults explicitly (see ``tfjob.defaults``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, cast

from kubeobjects.volcano import PodGroupCondition as PodGroupCondition
from kubeobjects.volcano import PodGroupStatus as PodGroupStatus

# Pod specs and pod templates are kept as open dicts: the TFJob CRD preserves unknown fields in
# the template, and the domain only touches a handful of keys it names explicitly.
JSONDict = dict[str, Any]


class OwnerReference(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class ObjectMeta(TypedDict, total=False):
    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[OwnerReference]
    finalizers: list[str]


class PodTemplateSpec(TypedDict, total=False):
    metadata: ObjectMeta
    spec: JSONDict


class ReplicaSpec(TypedDict, total=False):
    replicas: int
    restartPolicy: str
    template: PodTemplateSpec


class SchedulingPolicy(TypedDict, total=False):
    minAvailable: int
    queue: str
    minResources: dict[str, str | int | float]
    priorityClass: str
    scheduleTimeoutSeconds: int


class RunPolicy(TypedDict, total=False):
    cleanPodPolicy: str
    ttlSecondsAfterFinished: int
    activeDeadlineSeconds: int
    backoffLimit: int
    schedulingPolicy: SchedulingPolicy
    suspend: bool
    managedBy: str


class TFJobSpec(TypedDict, total=False):
    tfReplicaSpecs: dict[str, ReplicaSpec | None]
    runPolicy: RunPolicy
    successPolicy: str
    enableDynamicWorker: bool


class JobCondition(TypedDict, total=False):
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: str
    lastUpdateTime: str
    lastTransitionTime: str


class ReplicaStatus(TypedDict, total=False):
    active: int
    succeeded: int
    failed: int
    labelSelector: JSONDict
    selector: str


class GangRestart(TypedDict, total=False):
    pod: str  # the disrupted pod that started it
    reason: str  # its DisruptionTarget reason, or PodDeleted


class DisruptedPod(TypedDict, total=False):
    name: str
    uid: str


class JobStatus(TypedDict, total=False):
    conditions: list[JobCondition]
    replicaStatuses: dict[str, ReplicaStatus]
    startTime: str
    completionTime: str
    lastReconcileTime: str
    # tfgang's own (D2): recreations of failed pods, per replica type, so that backoffLimit
    # counts them across controller restarts. Unknown to upstream clients, who ignore it.
    restartCounts: dict[str, int]
    # tfgang's own (D18): disruptions, each counted once (a gang restart counts one) and never
    # toward backoffLimit; the gang restart in progress, present until its pods are created again;
    # and, in per-replica mode, the disrupted pods already counted, until they are gone.
    disruptions: int
    gangRestart: GangRestart
    disruptedPods: list[DisruptedPod]


class _Envelope(TypedDict, total=False):
    """What every stored object has around its spec and status."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta


class TFJob(_Envelope, total=False):
    spec: TFJobSpec
    status: JobStatus


class PodGroupSpec(TypedDict, total=False):
    minMember: int
    minTaskMember: dict[str, int]
    queue: str
    priorityClassName: str
    minResources: dict[str, str]


class PodGroup(_Envelope, total=False):
    spec: PodGroupSpec
    status: PodGroupStatus


def as_tfjob(obj: Mapping[str, Any]) -> TFJob:
    """A JSON object from the API, taken as a TFJob: the one place a raw dict becomes the wire type.

    Only the container is checked; its fields are checked where they are read (``read_facts``).
    """
    if not isinstance(obj, dict):
        raise TypeError(f"a TFJob must be a JSON object, not {type(obj).__name__}")
    return cast(TFJob, obj)


def as_podgroup(obj: Mapping[str, Any] | None) -> PodGroup | None:
    """A JSON object from the API (or None), taken as a PodGroup; see ``as_tfjob``."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise TypeError(f"a PodGroup must be a JSON object, not {type(obj).__name__}")
    return cast(PodGroup, obj)


# Pods and Services are read through a few well-known keys only; full typing would add nothing
# the planner uses and would fight the API server's open-ended shapes.
Pod = JSONDict
Service = JSONDict
