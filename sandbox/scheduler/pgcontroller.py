"""Volcano's pg-controller, pure part: a PodGroup for a Volcano pod that names none.

A pod for the Volcano scheduler without the ``scheduling.k8s.io/group-name`` annotation would never
be scheduled. vc-controller-manager gives it ``podgroup-<uid>`` (the uid of its controller owner, or
its own), with ``minMember: 1``, then annotates the pod (Volcano's pg-controller). Pods of one
owner share that PodGroup, which is exactly why an unannotated gang member loses the gang guarantee.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubeobjects.quantity import format_milli
from kubeobjects.volcano import PodGroupPhase
from sandbox.scheduler.resources import PODS, is_terminal, pod_demand
from sandbox.scheduler.snapshot import DEFAULT_QUEUE, GROUP_NAME_ANNOTATION

QUEUE_NAME_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"
PREFIX: Final = "podgroup-"


@dataclass(frozen=True)
class ImplicitGroup:
    namespace: str
    pod: str
    group: str
    body: Mapping[str, Any]
    """The PodGroup to create when it does not exist yet."""


def _owner(pod: Mapping[str, Any]) -> dict[str, Any]:
    meta = pod.get("metadata") or {}
    for reference in meta.get("ownerReferences") or []:
        if isinstance(reference, Mapping) and reference.get("controller"):
            return dict(reference)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": str(meta.get("name", "")),
        "uid": str(meta.get("uid", "")),
        "controller": True,
    }


def implicit_group(pod: Mapping[str, Any], gang_scheduler_names: frozenset[str]) -> ImplicitGroup | None:
    """The PodGroup the pg-controller would give ``pod``, or None when it needs none."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    annotations = meta.get("annotations") or {}
    if spec.get("schedulerName") not in gang_scheduler_names or annotations.get(GROUP_NAME_ANNOTATION):
        return None
    if spec.get("nodeName") or is_terminal(pod):
        return None
    if meta.get("deletionTimestamp") or not meta.get("uid"):
        return None
    owner = _owner(pod)
    name = f"{PREFIX}{owner['uid']}"
    namespace = str(meta.get("namespace", ""))
    demand = {k: format_milli(k, v) for k, v in pod_demand(pod).items() if k != PODS}
    spec_out: dict[str, Any] = {
        "minMember": 1,
        "queue": str(annotations.get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE),
        "minResources": demand,
    }
    if spec.get("priorityClassName"):
        spec_out["priorityClassName"] = spec["priorityClassName"]
    body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": [owner]},
        "spec": spec_out,
        "status": {"phase": PodGroupPhase.PENDING},
    }
    return ImplicitGroup(namespace, str(meta.get("name", "")), name, body)


def implicit_groups(
    pods: Iterable[Mapping[str, Any]], gang_scheduler_names: frozenset[str]
) -> list[ImplicitGroup]:
    found = (implicit_group(pod, gang_scheduler_names) for pod in pods)
    return [group for group in found if group is not None]
