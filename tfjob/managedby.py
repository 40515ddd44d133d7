"""Which controller runs a TFJob: ``spec.runPolicy.managedBy`` (reference §1.2, §3.1).

Unset, empty or ``kubeflow.org/training-operator`` mean tfgang's, the value training-operator
jobs carry, so tfgang takes over the jobs the operator ran. Any other value (Kueue's
``kueue.x-k8s.io/multikueue`` dispatches the job to a worker cluster and mirrors its status back)
names another manager: the controller plans nothing for such a job and the pod webhook does not
mutate its pods, so the two never fight over one object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeobjects.meta import mapping
from tfjob.constants import MANAGED_BY_TRAINING_OPERATOR


def managed_here(job: Mapping[str, Any]) -> bool:
    """True when tfgang runs ``job``: managedBy unset, empty or the training-operator's."""
    managed_by = mapping(mapping(job.get("spec")).get("runPolicy")).get("managedBy")
    return managed_by in (None, "", MANAGED_BY_TRAINING_OPERATOR)
