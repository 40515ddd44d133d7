"""Names, labels and owner references of a TFJob's pods and services (reference §3.2, §3.3).

These strings are how the controller finds its children again and how users' scripts select
them, so they are upstream's exactly: ``<job>-<lower rtype>-<index>`` and the
``training.kubeflow.org/*`` labels.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tfjob.constants import (
    API_VERSION,
    CHIEF,
    CONTROLLER_NAME,
    JOB_ROLE_MASTER,
    KIND,
    LABEL_JOB_NAME,
    LABEL_JOB_ROLE,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    MASTER,
    WORKER,
)
from tfjob.defaults import canonical_replica_type
from tfjob.wire import OwnerReference, TFJob

_DECIMAL_INDEX = re.compile(r"^[0-9]+$")


def replica_name(job_name: str, rtype: str, index: int) -> str:
    """The pod and service name of one replica: ``<job>-<lower rtype>-<index>``."""
    return f"{job_name}-{rtype.lower()}-{index}".replace("/", "-")


def job_selector(job_name: str) -> dict[str, str]:
    """The labels every pod and service of the job carries, for list selectors."""
    return {
        LABEL_OPERATOR_NAME: CONTROLLER_NAME,
        LABEL_JOB_NAME: job_name.replace("/", "-"),
    }


def replica_labels(job_name: str, rtype: str, index: int, *, master_role: bool) -> dict[str, str]:
    """The controller's labels of one replica; ``job-role: master`` only on master-role pods."""
    labels = job_selector(job_name)
    labels[LABEL_REPLICA_TYPE] = rtype.lower()
    labels[LABEL_REPLICA_INDEX] = str(index)
    if master_role:
        labels[LABEL_JOB_ROLE] = JOB_ROLE_MASTER
    return labels


def is_master_role(job: TFJob, rtype: str, index: int) -> bool:
    """Every Chief/Master pod when the job has one of those types, otherwise only Worker 0."""
    replica_specs = (job.get("spec") or {}).get("tfReplicaSpecs") or {}
    canonical_types = {canonical_replica_type(key) for key in replica_specs}
    rtype = canonical_replica_type(rtype)
    if canonical_types & {CHIEF, MASTER}:
        return rtype in (CHIEF, MASTER)
    return rtype == WORKER and index == 0


def owner_reference(job: TFJob) -> OwnerReference:
    """The controller owner reference that ties a child to its TFJob for GC and watches."""
    metadata = job.get("metadata") or {}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": metadata.get("name", ""),
        "uid": metadata.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def replica_index(obj: Mapping[str, object]) -> int | None:
    """The replica index from an object's label; None when missing or not a decimal integer."""
    metadata = obj.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    value = labels.get(LABEL_REPLICA_INDEX) if isinstance(labels, Mapping) else None
    if not isinstance(value, str) or not _DECIMAL_INDEX.match(value):
        return None
    return int(value)


def replica_type_key(job: TFJob, label_value: str) -> str | None:
    """The job's replica spec key whose lowercase spelling equals a ``replica-type`` label value."""
    replica_specs = (job.get("spec") or {}).get("tfReplicaSpecs") or {}
    return next((key for key in replica_specs if key.lower() == label_value), None)
