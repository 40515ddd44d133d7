"""The TFJob resource and the key every watched object maps to: the ``namespace/name`` of its job."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube.resources import PODGROUPS_V1BETA1, Resource
from kubeobjects.meta import Meta
from tfjob.constants import (
    API_VERSION,
    CONTROLLER_NAME,
    GROUP,
    KIND,
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    PLURAL,
    VERSION,
)
from tfjob.settings import Settings

TFJOBS = Resource(GROUP, VERSION, PLURAL, KIND)
SCHEDULER_PLUGINS_PODGROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")


def podgroup_resource(settings: Settings) -> Resource:
    """Volcano's PodGroup (``scheduling.volcano.sh/v1beta1``) or scheduler-plugins' (upstream v1.9)."""
    return PODGROUPS_V1BETA1 if settings.volcano else SCHEDULER_PLUGINS_PODGROUPS


# The selector for the pods and services the controller makes (upstream v1.9).
CHILD_LABEL_SELECTOR = f"{LABEL_OPERATOR_NAME}={CONTROLLER_NAME}"


def job_key_of_child(obj: Mapping[str, Any]) -> str | None:
    """The key of the TFJob that controls ``obj``: its controller ownerReference, else its job label.

    The label fallback covers a child whose owner reference was removed, which upstream's
    ownership filter then ignores; the planner decides what to do with it.
    """
    meta = Meta(obj)
    namespace = meta.namespace
    if not namespace:
        return None
    reference = meta.controller
    if reference is not None:
        if reference.get("kind") == KIND and reference.get("apiVersion") == API_VERSION:
            return f"{namespace}/{reference.get('name')}"
        return None  # controlled by something else: not ours
    job_name = meta.label(LABEL_JOB_NAME)
    return f"{namespace}/{job_name}" if job_name else None


# Volcano's word on a PodGroup that is not admitted: Normal events from the enqueue checks (and the
# Warning it repeats each session). Only these are watched, not every event in the cluster.
PODGROUP_EVENT_SELECTOR = "involvedObject.kind=PodGroup,reason=Unschedulable"


def job_key_of_podgroup_event(event: Mapping[str, Any]) -> str | None:
    """The job a PodGroup event concerns: PodGroups are named after their job (upstream v1.9)."""
    involved = event.get("involvedObject")
    if not isinstance(involved, Mapping):
        return None
    namespace, name = involved.get("namespace"), involved.get("name")
    if isinstance(namespace, str) and namespace and isinstance(name, str) and name:
        return f"{namespace}/{name}"
    return None


def podgroup_event_index(obj: dict[str, Any]) -> list[str]:
    """Store index function: ``namespace/job-name`` of the PodGroup an event is about."""
    key = job_key_of_podgroup_event(obj)
    return [key] if key is not None else []


def job_label_index(obj: dict[str, Any]) -> list[str]:
    """Store index function: ``namespace/job-name`` from the job-name label."""
    meta = Meta(obj)
    job_name = meta.label(LABEL_JOB_NAME)
    return [f"{meta.namespace}/{job_name}"] if job_name else []
