"""The pod the controller creates for one replica, and the pure helpers that decorate it.

Split of work (design, "Who does what at pod creation"): the controller builds the pod from the
replica template with name, labels, owner reference and restart policy; the mutating webhook
adds TF_CONFIG, the gang annotations and the scheduler name. So ``desired_pod`` adds none of
those; ``gang_marks`` says which marks the webhook adds, so the webhook and ``kubectl tfjob
explain`` take the same decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubeobjects.jsonvalues import copy_json
from tfjob.constants import (
    ANNOTATION_GROUP_NAME,
    ANNOTATION_TASK_SPEC,
    DEFAULT_RESTART_POLICY,
    LABEL_SCHEDULER_PLUGINS_POD_GROUP,
    RESTART_EXIT_CODE,
    RESTART_NEVER,
)
from tfjob.facts import JobFacts, ReplicaFacts
from tfjob.naming import replica_labels, replica_name
from tfjob.settings import Settings
from tfjob.wire import JSONDict, Pod


@dataclass(frozen=True)
class GangMarks:
    """What pod admission adds to a replica's pod so the gang scheduler treats it as one of the gang."""

    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    # Set when the pod must be sent to the gang scheduler; "" leaves the pod's schedulerName alone.
    scheduler_name: str = ""


def desired_pod(facts: JobFacts, rtype: str, index: int) -> Pod:
    """The pod for ``rtype``/``index`` of the job, built from its replica template."""
    replica = facts.replica(rtype)
    if replica is None:
        raise ValueError(f"the TFJob has no replica spec {rtype!r}")
    template: Any = copy_json(replica.spec.get("template")) or {}
    metadata: JSONDict = dict(template.get("metadata") or {})
    pod_spec: JSONDict = dict(template.get("spec") or {})

    labels = dict(metadata.get("labels") or {})
    labels.update(replica_labels(facts.name, rtype, index, master_role=facts.is_master_role(rtype, index)))
    metadata.pop("generateName", None)
    metadata["name"] = replica_name(facts.name, rtype, index)
    metadata["namespace"] = facts.namespace
    metadata["labels"] = labels
    metadata["ownerReferences"] = [dict(facts.owner_reference)]
    pod_spec["restartPolicy"] = pod_restart_policy(replica.restart_policy)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def pod_restart_policy(replica_restart_policy: str) -> str:
    """The pod restartPolicy for a replica restartPolicy: ExitCode -> Never, the rest as is."""
    if not replica_restart_policy:
        return DEFAULT_RESTART_POLICY
    if replica_restart_policy == RESTART_EXIT_CODE:
        return RESTART_NEVER
    return replica_restart_policy


def template_restart_policy_overridden(replica: ReplicaFacts) -> bool:
    """True when the template sets its own restartPolicy, which the replica policy overwrites."""
    return bool(replica.pod_spec.get("restartPolicy"))


def gang_annotations(job_name: str, rtype: str) -> dict[str, str]:
    """The Volcano annotations tying a pod to its job's PodGroup and task."""
    return {ANNOTATION_GROUP_NAME: job_name, ANNOTATION_TASK_SPEC: rtype.lower()}


def gang_marks(replica: ReplicaFacts, job_name: str, settings: Settings) -> GangMarks:
    """Volcano: the group-name/task-spec annotations; another gang scheduler: the scheduler-plugins
    pod-group label; gang off: nothing. The scheduler name only when the replica TEMPLATE left it
    empty, since the pod itself reaches admission defaulted to ``default-scheduler``."""
    if not settings.gang_enabled:
        return GangMarks()
    scheduler_name = "" if replica.scheduler_name else settings.gang_scheduler_name
    if settings.volcano:
        return GangMarks(annotations=gang_annotations(job_name, replica.rtype), scheduler_name=scheduler_name)
    return GangMarks(labels={LABEL_SCHEDULER_PLUGINS_POD_GROUP: job_name}, scheduler_name=scheduler_name)
