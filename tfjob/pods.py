"""The pod the controller creates for one replica, and the pure helpers that decorate it.

Split of work (design, "Who does what at pod creation"): the controller builds the pod from the
replica template with name, labels, owner reference and restart policy; the mutating webhook
adds TF_CONFIG, the gang annotations and the scheduler name. So ``desired_pod`` adds none of
those; ``gang_marks`` says which marks the webhook adds, so the webhook and ``kubectl tfjob
explain`` take the same decision.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from tfjob.constants import (
    ANNOTATION_GROUP_NAME,
    ANNOTATION_TASK_SPEC,
    DEFAULT_RESTART_POLICY,
    LABEL_SCHEDULER_PLUGINS_POD_GROUP,
    RESTART_EXIT_CODE,
    RESTART_NEVER,
)
from tfjob.naming import is_master_role, owner_reference, replica_labels, replica_name
from tfjob.settings import Settings
from tfjob.wire import JSONDict, Pod, ReplicaSpec, TFJob


@dataclass(frozen=True)
class GangMarks:
    """What pod admission adds to a replica's pod so the gang scheduler treats it as one of the gang."""

    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    # Set when the pod must be sent to the gang scheduler; "" leaves the pod's schedulerName alone.
    scheduler_name: str = ""


def desired_pod(job: TFJob, rtype: str, index: int) -> Pod:
    """The pod for ``rtype``/``index`` of a DEFAULTED job, built from its replica template."""
    replica_spec = _replica_spec(job, rtype)
    template: Any = copy.deepcopy(replica_spec.get("template")) or {}
    metadata: JSONDict = dict(template.get("metadata") or {})
    pod_spec: JSONDict = dict(template.get("spec") or {})
    job_metadata = job.get("metadata") or {}
    job_name = job_metadata.get("name", "")

    labels = dict(metadata.get("labels") or {})
    labels.update(replica_labels(job_name, rtype, index, master_role=is_master_role(job, rtype, index)))
    metadata.pop("generateName", None)
    metadata["name"] = replica_name(job_name, rtype, index)
    metadata["namespace"] = job_metadata.get("namespace", "")
    metadata["labels"] = labels
    metadata["ownerReferences"] = [dict(owner_reference(job))]
    pod_spec["restartPolicy"] = pod_restart_policy(replica_spec.get("restartPolicy") or "")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def pod_restart_policy(replica_restart_policy: str) -> str:
    """The pod restartPolicy for a replica restartPolicy: ExitCode -> Never, the rest as is."""
    if not replica_restart_policy:
        return DEFAULT_RESTART_POLICY
    if replica_restart_policy == RESTART_EXIT_CODE:
        return RESTART_NEVER
    return replica_restart_policy


def template_restart_policy_overridden(spec: ReplicaSpec) -> bool:
    """True when the template sets its own restartPolicy, which the replica policy overwrites."""
    return bool(_template_pod_spec(spec).get("restartPolicy"))


def gang_annotations(job_name: str, rtype: str) -> dict[str, str]:
    """The Volcano annotations tying a pod to its job's PodGroup and task."""
    return {ANNOTATION_GROUP_NAME: job_name, ANNOTATION_TASK_SPEC: rtype.lower()}


def gang_marks(job: TFJob, job_name: str, rtype: str, settings: Settings) -> GangMarks:
    """Volcano: the group-name/task-spec annotations; another gang scheduler: the scheduler-plugins
    pod-group label; gang off: nothing. The scheduler name only when the replica TEMPLATE left it
    empty, since the pod itself reaches admission defaulted to ``default-scheduler``."""
    if not settings.gang_enabled:
        return GangMarks()
    scheduler_name = "" if template_scheduler_name(job, rtype) else settings.gang_scheduler_name
    if settings.volcano:
        return GangMarks(annotations=gang_annotations(job_name, rtype), scheduler_name=scheduler_name)
    return GangMarks(labels={LABEL_SCHEDULER_PLUGINS_POD_GROUP: job_name}, scheduler_name=scheduler_name)


def template_scheduler_name(job: TFJob, rtype: str) -> str:
    """The schedulerName the replica TEMPLATE names; "" when it left it empty."""
    replica_spec = _find_replica_spec(job, rtype)
    if replica_spec is None:
        return ""
    scheduler_name = _template_pod_spec(replica_spec).get("schedulerName")
    return scheduler_name if isinstance(scheduler_name, str) else ""


def _replica_spec(job: TFJob, rtype: str) -> ReplicaSpec:
    spec = _find_replica_spec(job, rtype)
    if spec is None:
        raise ValueError(f"the TFJob has no replica spec {rtype!r}")
    return spec


def _find_replica_spec(job: TFJob, rtype: str) -> ReplicaSpec | None:
    replica_specs: Any = (job.get("spec") or {}).get("tfReplicaSpecs") or {}
    spec = replica_specs.get(rtype)
    if spec is None:
        # Callers may hold a raw job whose key is spelled differently (``worker`` for ``Worker``).
        spec = next(
            (value for key, value in replica_specs.items() if key.lower() == rtype.lower()),
            None,
        )
    return spec if isinstance(spec, dict) else None  # type: ignore[return-value]


def _template_pod_spec(spec: ReplicaSpec) -> JSONDict:
    template: Any = spec.get("template")
    pod_spec: Any = template.get("spec") if isinstance(template, dict) else None
    return pod_spec if isinstance(pod_spec, dict) else {}
