"""One parsed, defaulted view of a TFJob: what the planner, the webhook, TF_CONFIG and the PodGroup
read, built once per job by ``read_facts``; ``FactsMemo`` keeps them per job version for callers
that read the same stored job over and over (the controller's passes).

Stored objects can hold anything the schema lets through (or more, on a cluster without the
CRD's schema), so every field is read here, once, defensively: a value of the wrong type counts
as unset and takes its default. Nothing else reads a raw job's spec, so the controller (which
creates the pods) and the webhook (which admits them) can never disagree on a job's size.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from kubeobjects.meta import Meta, mapping, scalar_text, text
from tfjob.constants import (
    ANNOTATION_GANG_RESTART,
    ANNOTATION_NETWORK_TOPOLOGY,
    API_VERSION,
    CHIEF,
    CLEAN_POD_POLICY_NONE,
    DEFAULT_RESTART_POLICY,
    KIND,
    KNOWN_TYPES,
    MANAGED_BY_TRAINING_OPERATOR,
    MASTER,
    MAX_TIER_NAME_LENGTH,
    NETWORK_TOPOLOGY_FIELDS,
    NETWORK_TOPOLOGY_MODES,
    NORMALISE_ORDER,
    PS,
    SUCCESS_POLICY_ALL_WORKERS,
    WORKER,
)
from tfjob.defaults import canonical_replica_type, replica_port, with_defaults
from tfjob.wire import OwnerReference, ReplicaSpec, TFJob

_T = TypeVar("_T")
Derived = TypeVar("Derived")


def _int_or_none(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def replica_count(value: object) -> int:
    """A replica spec's ``replicas``: unset or not an integer counts as 1 (the default), never below 0."""
    replicas = _int_or_none(value)
    return max(replicas, 0) if replicas is not None else 1


@dataclass(frozen=True)
class ReplicaFacts:
    rtype: str  # the spec key, canonical for the known types
    replicas: int
    restart_policy: str
    spec: ReplicaSpec  # the defaulted replica spec: the pod template comes from here
    port: int  # the tensorflow container's tfjob-port, else the default
    scheduler_name: str  # the template's schedulerName; "" when it left it empty
    priority_class_name: str  # the template's priorityClassName; "" when unset

    @property
    def pod_spec(self) -> Mapping[str, Any]:
        return mapping(mapping(self.spec.get("template")).get("spec"))


@dataclass(frozen=True)
class JobFacts:
    job: TFJob  # the defaulted job (with_defaults applied once, in memory: D8)
    name: str
    namespace: str
    uid: str
    replica_types: tuple[ReplicaFacts, ...]  # known types in normalise order, then unknown ones
    success_all_workers: bool
    dynamic_worker: bool
    clean_pod_policy: str
    backoff_limit: int | None
    active_deadline_seconds: int | None
    ttl_seconds_after_finished: int | None
    schedule_timeout_seconds: int | None
    min_available: int | None
    queue: str
    priority_class: str
    min_resources: Mapping[str, Any] | None  # schedulingPolicy.minResources as written
    suspend: bool
    deleting: bool
    managed_by: str  # runPolicy.managedBy, "" when unset
    gang_restart: bool  # a disruption restarts the whole gang (annotation, else: no PS)
    # the PodGroup's spec.networkTopology from the annotation; None when unset or invalid
    network_topology: Mapping[str, Any] | None = None
    # What callers derived from these facts, by key (``remembered``); not part of the facts.
    _derived: dict[Hashable, Any] = field(default_factory=dict, compare=False, repr=False)

    def remembered(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()``, once per ``key`` for these facts.

        Facts are kept for later passes over the same job version (``FactsMemo``), and so is what
        is derived from them this way. The value is shared like the facts: never change it.
        """
        derived = self._derived
        if key in derived:
            return cast(_T, derived[key])
        value = derived[key] = compute()
        return value

    @property
    def managed_here(self) -> bool:
        """Whether tfgang runs the job (upstream v1.9): managedBy unset, empty or
        ``kubeflow.org/training-operator``, the value training-operator's jobs carry, so tfgang
        takes over the jobs the operator ran. Any other value (Kueue's
        ``kueue.x-k8s.io/multikueue``) names another manager: the controller plans nothing for the
        job and the pod webhook does not mutate its pods, so the two never fight over one object."""
        return self.managed_by in ("", MANAGED_BY_TRAINING_OPERATOR)

    @property
    def qualified_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def has_chief_or_master(self) -> bool:
        return any(replica.rtype in (CHIEF, MASTER) for replica in self.replica_types)

    @property
    def total_replicas(self) -> int:
        return sum(replica.replicas for replica in self.replica_types)

    @property
    def distributed(self) -> bool:
        """False only when the known replica types add up to exactly one replica (upstream v1.9)."""
        return sum(r.replicas for r in self.replica_types if r.rtype in KNOWN_TYPES) != 1

    @property
    def owner_reference(self) -> OwnerReference:
        """The controller owner reference that ties a child to its TFJob for GC and watches."""
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def replica(self, rtype: str) -> ReplicaFacts | None:
        return next((replica for replica in self.replica_types if replica.rtype == rtype), None)

    def replica_for_label(self, label_value: str) -> ReplicaFacts | None:
        """The replica type whose lowercase spelling equals a ``replica-type`` label value."""
        return next((r for r in self.replica_types if r.rtype.lower() == label_value), None)

    def is_master_role(self, rtype: str, index: int) -> bool:
        """Every Chief/Master pod when the job has one of those types, otherwise only Worker 0."""
        rtype = canonical_replica_type(rtype)
        if self.has_chief_or_master:
            return rtype in (CHIEF, MASTER)
        return rtype == WORKER and index == 0


def read_facts(job: Mapping[str, Any]) -> JobFacts:
    """The one view of ``job`` (raw, as stored): defaulted once, every field read with its type checked."""
    defaulted = with_defaults(job)
    meta = Meta(defaulted)
    spec = mapping(defaulted.get("spec"))
    run_policy = mapping(spec.get("runPolicy"))
    scheduling = mapping(run_policy.get("schedulingPolicy"))
    specs = mapping(spec.get("tfReplicaSpecs"))
    known = [key for key in NORMALISE_ORDER if key in specs]
    unknown = sorted(key for key in specs if key not in NORMALISE_ORDER)
    replica_types = [
        _replica_facts(key, specs[key])
        for key in (*known, *unknown)
        # A null spec: validation rejects it; there is nothing to run.
        if isinstance(specs[key], Mapping)
    ]
    clean_pod_policy = run_policy.get("cleanPodPolicy")
    min_resources = scheduling.get("minResources")
    return JobFacts(
        job=defaulted,
        name=meta.name,
        namespace=meta.namespace or "default",
        uid=meta.uid,
        replica_types=tuple(replica_types),
        success_all_workers=spec.get("successPolicy") == SUCCESS_POLICY_ALL_WORKERS,
        dynamic_worker=spec.get("enableDynamicWorker") is True,
        clean_pod_policy=clean_pod_policy if isinstance(clean_pod_policy, str) else CLEAN_POD_POLICY_NONE,
        backoff_limit=_int_or_none(run_policy.get("backoffLimit")),
        active_deadline_seconds=_int_or_none(run_policy.get("activeDeadlineSeconds")),
        ttl_seconds_after_finished=_int_or_none(run_policy.get("ttlSecondsAfterFinished")),
        schedule_timeout_seconds=_int_or_none(scheduling.get("scheduleTimeoutSeconds")),
        min_available=_int_or_none(scheduling.get("minAvailable")),
        queue=text(scheduling.get("queue")),
        priority_class=text(scheduling.get("priorityClass")),
        min_resources=min_resources if isinstance(min_resources, Mapping) else None,
        suspend=run_policy.get("suspend") is True,
        deleting=meta.deleting,
        managed_by=text(run_policy.get("managedBy")),
        gang_restart=gang_restart_wanted(meta.annotations.get(ANNOTATION_GANG_RESTART), replica_types),
        network_topology=network_topology(meta.annotations.get(ANNOTATION_NETWORK_TOPOLOGY)),
    )


def network_topology(annotation: object) -> dict[str, Any] | None:
    """``tfgang.io/network-topology`` as the PodGroup's ``spec.networkTopology``: mode (default
    ``hard``, as Volcano's CRD defaults it) and ``highestTierAllowed`` or ``highestTierName`` when
    given; None when the annotation is unset or not what ``tfjob.validation`` accepts."""
    if not isinstance(annotation, str):
        return None
    try:
        parsed = json.loads(annotation)
    except (ValueError, RecursionError):  # hostile nesting must not crash a pass
        return None
    if not isinstance(parsed, dict) or set(parsed) - set(NETWORK_TOPOLOGY_FIELDS):
        return None
    mode = parsed.get("mode", NETWORK_TOPOLOGY_MODES[0])
    tier = parsed.get("highestTierAllowed")
    if mode not in NETWORK_TOPOLOGY_MODES:
        return None
    if tier is not None and (isinstance(tier, bool) or not isinstance(tier, int) or tier < 0):
        return None
    tier_name = parsed.get("highestTierName")
    if tier_name is not None and not valid_tier_name(tier_name):
        return None
    if tier is not None and tier_name is not None:
        return None
    topology: dict[str, Any] = {"mode": mode}
    if tier is not None:
        topology["highestTierAllowed"] = tier
    if tier_name is not None:
        topology["highestTierName"] = tier_name
    return topology


def valid_tier_name(value: object) -> bool:
    """A HyperNode tier's name as Volcano's CRD takes it: a non-empty string of bounded length."""
    return isinstance(value, str) and 0 < len(value) <= MAX_TIER_NAME_LENGTH


def gang_restart_wanted(annotation: str | None, replica_types: Sequence[ReplicaFacts]) -> bool:
    """``tfgang.io/gang-restart``: "true"/"false"; unset (or invalid, which validation rejects): a
    job without PS replicas restarts as a gang, its workers being one collective."""
    if annotation == "true":
        return True
    if annotation == "false":
        return False
    return not any(replica.rtype == PS and replica.replicas > 0 for replica in replica_types)


def _replica_facts(key: str, replica_spec: ReplicaSpec) -> ReplicaFacts:
    pod_spec = mapping(mapping(replica_spec.get("template")).get("spec"))
    policy = replica_spec.get("restartPolicy")
    return ReplicaFacts(
        rtype=key,
        replicas=replica_count(replica_spec.get("replicas")),
        restart_policy=policy if isinstance(policy, str) and policy else DEFAULT_RESTART_POLICY,
        spec=replica_spec,
        port=replica_port(replica_spec),
        scheduler_name=text(pod_spec.get("schedulerName")),
        priority_class_name=text(pod_spec.get("priorityClassName")),
    )


JobVersion = tuple[str, str, str, str, bool]


def job_version(job: Mapping[str, Any]) -> JobVersion:
    """What identifies one stored state of a job: namespace, name, uid, resourceVersion, and
    whether it is terminating (a client's view of its own delete keeps the resourceVersion)."""
    # What Meta's fields read, without the views: this runs on every pod admission and reconcile.
    raw = mapping(job.get("metadata"))
    return (
        scalar_text(raw.get("namespace")),
        scalar_text(raw.get("name")),
        scalar_text(raw.get("uid")),
        scalar_text(raw.get("resourceVersion")),
        bool(raw.get("deletionTimestamp")),
    )


class VersionMemo(Generic[Derived]):
    """What ``derive(job)`` gives, once per job version, for the most recently used ``capacity`` jobs.

    A job without a uid or resourceVersion (not from an API server) is derived every time: its
    content could change under the same key. What is handed out is shared between callers and must
    not be changed. ``on_keep`` hears of each value kept, ``on_evict`` of each value dropped for
    room (``evict_oldest`` included).
    """

    def __init__(
        self,
        derive: Callable[[TFJob], Derived],
        capacity: int,
        *,
        on_keep: Callable[[Derived], None] | None = None,
        on_evict: Callable[[Derived], None] | None = None,
    ) -> None:
        self._derive = derive
        self._capacity = capacity
        self._on_keep = on_keep
        self._on_evict = on_evict
        self._entries: OrderedDict[JobVersion, Derived] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, job: TFJob) -> Derived:
        version = job_version(job)
        if not version[2] or not version[3]:
            return self._derive(job)
        entries = self._entries
        value = entries.get(version)
        if value is not None:
            entries.move_to_end(version)
            return value
        value = entries[version] = self._derive(job)
        if self._on_keep is not None:
            self._on_keep(value)
        if len(entries) > self._capacity:
            self.evict_oldest()
        return value

    def evict_oldest(self) -> None:
        if self._entries:
            _, value = self._entries.popitem(last=False)
            if self._on_evict is not None:
                self._on_evict(value)


class FactsMemo(VersionMemo[JobFacts]):
    """``read_facts`` once per job version (the controller's passes over the same stored job)."""

    def __init__(self, capacity: int) -> None:
        super().__init__(read_facts, capacity)

    def facts(self, job: TFJob) -> JobFacts:
        return self.get(job)
