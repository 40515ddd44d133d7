"""Names, labels and owner references of a TFJob's pods and services (upstream v1.9).

These strings are how the controller finds its children again and how users' scripts select
them, so they are upstream's exactly: ``<job>-<lower rtype>-<index>`` and the
``training.kubeflow.org/*`` labels.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kubeobjects.meta import Meta
from tfjob.constants import (
    CONTROLLER_NAME,
    JOB_ROLE_MASTER,
    LABEL_JOB_NAME,
    LABEL_JOB_ROLE,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
)

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


def replica_index(obj: Mapping[str, object]) -> int | None:
    """The replica index from an object's label; None when missing or not a decimal integer."""
    value = Meta(obj).label(LABEL_REPLICA_INDEX)
    return None if value is None else replica_index_value(value)


def replica_index_value(value: str) -> int | None:
    """A ``replica-index`` label value as an index; None when it is not a decimal integer."""
    if not _DECIMAL_INDEX.match(value):
        return None
    return int(value)
