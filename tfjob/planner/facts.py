"""The facts of a defaulted TFJob the planner decides on, read once with their types checked.

Stored objects can hold anything the schema lets through (or more, on a cluster without the
CRD's schema), so every field is read defensively: a value of the wrong type counts as unset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubeobjects.meta import mapping
from tfjob.constants import (
    CHIEF,
    CLEAN_POD_POLICY_NONE,
    DEFAULT_RESTART_POLICY,
    MASTER,
    NORMALISE_ORDER,
    SUCCESS_POLICY_ALL_WORKERS,
)
from tfjob.wire import TFJob


def _int_or_none(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


@dataclass(frozen=True)
class ReplicaFacts:
    rtype: str  # the spec key, canonical for the known types
    replicas: int
    restart_policy: str


@dataclass(frozen=True)
class JobFacts:
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
    suspend: bool
    deleting: bool

    @property
    def qualified_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def has_chief_or_master(self) -> bool:
        return any(replica.rtype in (CHIEF, MASTER) for replica in self.replica_types)

    @property
    def total_replicas(self) -> int:
        return sum(replica.replicas for replica in self.replica_types)

    def replica(self, rtype: str) -> ReplicaFacts | None:
        return next((replica for replica in self.replica_types if replica.rtype == rtype), None)


def read_facts(job: TFJob) -> JobFacts:
    """The planner's view of a job that has been through ``with_defaults``."""
    metadata = mapping(job.get("metadata"))
    spec = mapping(job.get("spec"))
    run_policy = mapping(spec.get("runPolicy"))
    scheduling = mapping(run_policy.get("schedulingPolicy"))
    specs = mapping(spec.get("tfReplicaSpecs"))
    known = [key for key in NORMALISE_ORDER if key in specs]
    unknown = sorted(key for key in specs if key not in NORMALISE_ORDER)
    replica_types = []
    for key in (*known, *unknown):
        replica_spec = specs[key]
        if not isinstance(replica_spec, Mapping):
            continue  # a null spec: validation rejects it; there is nothing to run
        replicas = _int_or_none(replica_spec.get("replicas"))
        policy = replica_spec.get("restartPolicy")
        replica_types.append(
            ReplicaFacts(
                rtype=key,
                replicas=max(replicas, 0) if replicas is not None else 1,
                restart_policy=policy if isinstance(policy, str) and policy else DEFAULT_RESTART_POLICY,
            )
        )
    clean_pod_policy = run_policy.get("cleanPodPolicy")
    return JobFacts(
        name=str(metadata.get("name") or ""),
        namespace=str(metadata.get("namespace") or "default"),
        uid=str(metadata.get("uid") or ""),
        replica_types=tuple(replica_types),
        success_all_workers=spec.get("successPolicy") == SUCCESS_POLICY_ALL_WORKERS,
        dynamic_worker=spec.get("enableDynamicWorker") is True,
        clean_pod_policy=clean_pod_policy if isinstance(clean_pod_policy, str) else CLEAN_POD_POLICY_NONE,
        backoff_limit=_int_or_none(run_policy.get("backoffLimit")),
        active_deadline_seconds=_int_or_none(run_policy.get("activeDeadlineSeconds")),
        ttl_seconds_after_finished=_int_or_none(run_policy.get("ttlSecondsAfterFinished")),
        schedule_timeout_seconds=_int_or_none(scheduling.get("scheduleTimeoutSeconds")),
        suspend=run_policy.get("suspend") is True,
        deleting=bool(metadata.get("deletionTimestamp")),
    )
