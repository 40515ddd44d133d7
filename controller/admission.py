"""Admission checked on every pod: did the mutating webhook run on the pod the controller created?

The controller builds a pod without ``TF_CONFIG`` and without the gang marks; the mutating webhook
adds them at admission (``tfjob.pods``, ``webhook.mutate_pod``). When the webhook does not run
(its configuration is missing, or its namespace or object selector does not match), the API
server stores the pod as sent, and it would run without TF_CONFIG, outside its gang, under the
default scheduler. The create's answer tells: it is the stored pod, so the marks the webhook
adds are on it or not. Under a gang scheduler the marks are metadata (Volcano's
``scheduling.k8s.io/group-name`` annotation, scheduler-plugins' pod-group label), which the
answer asked for as metadata alone holds; with gang scheduling off the webhook adds only
``TF_CONFIG`` (to distributed jobs), so then the whole pod is asked back and its env read; a
pod the webhook would not change at all needs no check.

A pod that came back unmutated is deleted at once, with its uid as precondition and no grace
period: a scheduler may have bound it in that moment (the tests saw it happen), but no node starts
it. The pass then fails with ``NotAdmitted``: the job gets a
Warning event and its Created condition the reason ``AdmissionWebhookMissing``, and the work
queue retries the job with back-off, so a restored configuration heals it. A webhook restored
between the create and the delete changes nothing: the delete names the unmutated pod's uid, and
the retry makes the pod anew under the same name (a create meeting the old one still terminating
fails and is retried), so a replica never has two pods. ``Unadmitted``
remembers the deleted pods' uids until their deletion is seen, so that neither the planner (it
would take the pod, still in the cache, for a terminating or lost one) nor their watch events
(they would requeue the job at once, past the back-off) see them: such a deletion is never a
restart and never charged to ``backoffLimit`` (D2, D4). The watch may bring a pod's ADDED event
before its create's answer is read, so ``Unadmitted`` also knows the pod creates in flight, whose
ADDED event wakes nobody: the pass that creates the pod sees the answer itself.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubeobjects.meta import Meta, mapping, sequence
from tfjob.constants import (
    CONTAINER_NAME,
    LABEL_REPLICA_TYPE,
    REASON_ADMISSION_WEBHOOK_MISSING,
    TF_CONFIG_ENV,
)
from tfjob.facts import JobFacts
from tfjob.planner.actions import WARNING, Event
from tfjob.pods import gang_marks
from tfjob.settings import Settings

UNADMITTED_CAPACITY: Final = 4096


@dataclass(frozen=True)
class MutationCheck:
    """What a pod must carry after admission: the webhook's annotations and labels, or TF_CONFIG."""

    annotations: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    tf_config: bool = False  # checked on the whole pod, only when no mark tells

    @property
    def needs_spec(self) -> bool:
        return self.tf_config

    def mutated(self, pod: Mapping[str, Any]) -> bool:
        """Whether ``pod`` (a create's answer, or a read) carries what the webhook adds."""
        meta = Meta(pod)
        if any(meta.annotations.get(key) != value for key, value in self.annotations.items()):
            return False
        if any(meta.labels.get(key) != value for key, value in self.labels.items()):
            return False
        return not self.tf_config or _tf_config_of(pod) is not None


def _tensorflow_container(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for container in sequence(mapping(pod.get("spec")).get("containers")):
        if isinstance(container, dict) and container.get("name") == CONTAINER_NAME:
            return container
    return None


def _tf_config_of(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    container = _tensorflow_container(pod)
    for entry in sequence(mapping(container).get("env")):
        if isinstance(entry, dict) and entry.get("name") == TF_CONFIG_ENV:
            return entry
    return None


def mutation_check(facts: JobFacts, pod: Mapping[str, Any], settings: Settings) -> MutationCheck | None:
    """What to look for on the answer to creating ``pod``; None when the webhook would change
    nothing the answer could show (its marks are in the template already, and no TF_CONFIG is due)."""
    rtype = Meta(pod).label(LABEL_REPLICA_TYPE)
    replica = facts.replica_for_label(rtype) if rtype is not None else None
    if replica is None:
        return None
    marks = gang_marks(replica, facts.name, settings)
    meta = Meta(pod)
    annotations = {k: v for k, v in marks.annotations.items() if meta.annotations.get(k) != v}
    labels = {k: v for k, v in marks.labels.items() if meta.labels.get(k) != v}
    if annotations or labels:
        return MutationCheck(annotations, labels)
    if facts.distributed and _tensorflow_container(pod) is not None and _tf_config_of(pod) is None:
        return MutationCheck(tf_config=True)
    return None


class NotAdmitted(Exception):
    """A pod came back from its create without the mutating webhook's marks and was deleted."""

    def __init__(self, pod_name: str, namespace: str) -> None:
        self.pod_name = pod_name
        self.namespace = namespace
        super().__init__(
            f"the mutating webhook did not run on pod {pod_name}: its MutatingWebhookConfiguration is "
            f"missing, or its namespace or object selector does not match namespace {namespace}; "
            "the pod was deleted before it could run without TF_CONFIG and is created again with back-off"
        )

    def event(self) -> Event:
        return Event(WARNING, REASON_ADMISSION_WEBHOOK_MISSING, str(self))


class Unadmitted:
    """Uids of pods deleted for lacking admission, until their deletion is seen (bounded), and the
    pod creates in flight."""

    def __init__(self, capacity: int = UNADMITTED_CAPACITY) -> None:
        self._capacity = capacity
        self._uids: OrderedDict[str, None] = OrderedDict()
        self._creating: set[tuple[str, str]] = set()

    @contextlib.contextmanager
    def creating(self, namespace: str, name: str) -> Iterator[None]:
        """While the block runs, the pod's ADDED event is the create's own answer arriving early."""
        key = (namespace, name)
        self._creating.add(key)
        try:
            yield
        finally:
            self._creating.discard(key)

    def quiet(self, event_type: str, pod: Mapping[str, Any]) -> bool:
        """Whether a watch event about ``pod`` must not wake its job (see the module docstring)."""
        meta = Meta(pod)
        if self._uids and meta.uid in self._uids:
            if event_type == "DELETED":
                self._uids.pop(meta.uid, None)
            return True
        return event_type == "ADDED" and (meta.namespace, meta.name) in self._creating

    def add(self, uid: str) -> None:
        self._uids[uid] = None
        while len(self._uids) > self._capacity:
            self._uids.popitem(last=False)

    def __contains__(self, uid: object) -> bool:
        return uid in self._uids

    def __len__(self) -> int:
        return len(self._uids)
