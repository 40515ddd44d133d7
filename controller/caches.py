"""The controller's watch-fed caches and how their events turn into job keys for the work queue.

Six reflectors keep six stores (seven with a namespace scope): TFJobs, the controller's pods and
services (by the ``operator-name`` label), PodGroups, PriorityClasses and, under Volcano, the
``Unschedulable`` events about PodGroups (the only place Volcano says why it does not admit a gang
whose pods are held back; the planner reports it, ``tfjob.planner.waiting``). Every event maps to
the key of the job it concerns; a PriorityClass change touches every job (their PodGroup
``minResources`` order can depend on it, D11), which is rare enough to simply requeue all of them.
A PodGroup event wakes its job only when it says something new: Volcano repeats them every session,
and a repeat only bumps the count. With a namespace scope (``controller.scope``) a seventh keeps
the Namespaces, metadata alone, to match the scope's selector against their labels; a namespace
that enters or leaves the scope wakes its jobs.

What a reflector's first list reports, and a PriorityClass change, is queued as a resync
(``enqueue_resync``): after a restart that is every object there is, and a job created or changed
meanwhile must not wait behind ten thousand passes that find nothing to do. The exception is a job
the first list finds without any status: no controller has reconciled it yet (it was created while
none ran, or just before this one started), so it is a change and goes ahead of the resyncs.
Relists report only what changed during the gap, so they are queued as changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from controller.admission import Unadmitted
from controller.resources import (
    CHILD_LABEL_SELECTOR,
    PODGROUP_EVENT_SELECTOR,
    TFJOBS,
    job_key_of_child,
    job_key_of_podgroup_event,
    job_label_index,
    podgroup_event_index,
    podgroup_resource,
)
from controller.scope import NamespaceScope
from kube.api import KubeApi
from kube.ownwrites import OwnWrites
from kube.reflector import Handler, Reflector
from kube.resources import EVENTS, NAMESPACES, PODS, PRIORITY_CLASSES, SERVICES, Resource
from kube.store import Store, object_key
from kubeobjects.meta import Meta
from tfjob.facts import FactsMemo
from tfjob.planner import Observed
from tfjob.settings import Settings
from tfjob.wire import as_podgroup, as_tfjob

logger = logging.getLogger(__name__)

JOB_INDEX = "job"
NAMESPACE_INDEX = "namespace"
FACTS_MEMO_CAPACITY = 1024

EnqueueKey = Callable[[str], None]


def _priority_value(obj: Mapping[str, Any]) -> int:
    value = obj.get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def trim(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop ``metadata.managedFields``, which no reader here needs.

    kube-apiserver's field-manager records are often the largest part of a small object's metadata
    and would otherwise be kept for every cached object (the sandbox writes none).
    """
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj


def trim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """Also drop the cached pod's ``spec``, as client-go's informer transforms do.

    The planner reads a pod's metadata and status only (its desired pods come from the job's
    templates), and the spec is most of a pod's size: containers, env with TF_CONFIG, volumes,
    tolerations. Thousands of pods cost tens of MiB less this way.
    """
    pod.pop("spec", None)
    return trim(pod)


def trim_service(service: dict[str, Any]) -> dict[str, Any]:
    """Keep only what the planner reads of a service: its metadata (name, labels, owner, deletion).

    Services are listed and watched as metadata alone (``_METADATA_ONLY``), so this only takes
    off what a server that cannot send metadata alone sent all the same."""
    for key in [key for key in service if key not in ("apiVersion", "kind", "metadata")]:
        del service[key]
    return trim(service)


# The reflectors' transforms, so listed and watched objects alike are trimmed before a store keeps them.
_TRIM: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    PODS.plural: trim_pod,
    SERVICES.plural: trim_service,
}
# Listed and watched as metadata alone: the server neither encodes nor sends what the cache drops.
_METADATA_ONLY = frozenset({SERVICES.plural})
# First listed from the API server's watch cache (``Reflector``'s ``first_list_from_cache``): after a
# restart with 10,000 jobs, paging 100,000 objects out of etcd was most of the time to ready. Not
# the pods: their whole list in one answer would be hundreds of MiB (their specs and managedFields,
# which the cache drops only once decoded), so they are paged out of etcd as before.
_FIRST_LIST_PAGED = frozenset({PODS.plural})
# What the controller creates of these it asks back as metadata alone (``KubeApi.create``'s
# ``metadata_only``), for the read-your-writes overlay until the watch brings the object: the
# caches keep no more of a service, and of a pod only its status besides, of which a pod just
# created has nothing but Pending, what the planner reads a pod without status as.
METADATA_ONLY_ON_CREATE = frozenset({PODS.plural, SERVICES.plural})


class JobCaches:
    def __init__(
        self,
        api: KubeApi,
        writes: OwnWrites,
        enqueue: EnqueueKey,
        *,
        enqueue_resync: EnqueueKey | None = None,
        namespace: str = "",
        scope: NamespaceScope = NamespaceScope(),
        settings: Settings = Settings(),
        watch_timeout_seconds: int = 290,
    ) -> None:
        self.writes = writes
        self.scope = scope
        # Pods deleted because admission did not mutate them: hidden until their deletion is seen.
        self.unadmitted = Unadmitted()
        # A job's passes mostly read one stored version again (its first pass, then the one after
        # Volcano admits its gang): its facts are read once. Sized for the jobs of a burst whose
        # passes interleave; each entry is one defaulted copy of a job.
        self._facts = FactsMemo(capacity=FACTS_MEMO_CAPACITY)
        self._enqueue = enqueue
        self._enqueue_resync = enqueue_resync if enqueue_resync is not None else enqueue
        self.jobs = Store()
        self.pods = Store()
        self.services = Store()
        self.podgroups = Store()
        self.priority_classes = Store()
        self.podgroup_events = Store()
        self.namespaces = Store()
        for store in (self.pods, self.services):
            store.add_index(JOB_INDEX, job_label_index)
        self.podgroup_events.add_index(JOB_INDEX, podgroup_event_index)

        def reflector(res: Resource, store: Store, *, child: bool, selector: str | None = None) -> Reflector:
            made = Reflector(
                api,
                res,
                store,
                namespace=namespace or None,
                label_selector=selector,
                watch_timeout_seconds=watch_timeout_seconds,
                transform=_TRIM.get(res.plural, trim),
                metadata_only=res.plural in _METADATA_ONLY,
                first_list_from_cache=res.plural not in _FIRST_LIST_PAGED,
            )
            enqueue = self._enqueuer(made)
            made.add_handler(self._child_handler(res, enqueue) if child else self._job_handler(made))
            return made

        self.reflectors = [
            reflector(TFJOBS, self.jobs, child=False),
            reflector(PODS, self.pods, child=True, selector=CHILD_LABEL_SELECTOR),
            reflector(SERVICES, self.services, child=True, selector=CHILD_LABEL_SELECTOR),
            Reflector(
                api,
                PRIORITY_CLASSES,
                self.priority_classes,
                handlers=[self._priority_class_handler],
                watch_timeout_seconds=watch_timeout_seconds,
                transform=trim,
                first_list_from_cache=True,
            ),
        ]
        self.podgroup_resource = podgroup_resource(settings)
        if settings.gang_enabled:
            self.reflectors.append(reflector(self.podgroup_resource, self.podgroups, child=True))
        if settings.volcano:
            self.reflectors.append(
                Reflector(
                    api,
                    EVENTS,
                    self.podgroup_events,
                    namespace=namespace or None,
                    field_selector=PODGROUP_EVENT_SELECTOR,
                    watch_timeout_seconds=watch_timeout_seconds,
                    first_list_from_cache=True,
                )
            )
            events = self.reflectors[-1]
            events.add_handler(self._podgroup_event_handler(self._enqueuer(events)))
        if not scope.everywhere:
            self.jobs.add_index(NAMESPACE_INDEX, lambda obj: [Meta(obj).namespace])
            namespaces = Reflector(
                api,
                NAMESPACES,
                self.namespaces,
                watch_timeout_seconds=watch_timeout_seconds,
                transform=trim,
                metadata_only=True,
                first_list_from_cache=True,
            )
            namespaces.add_handler(self._namespace_handler(self._enqueuer(namespaces)))
            self.reflectors.append(namespaces)

    # -- events -> keys ----------------------------------------------------------------------

    def _enqueuer(self, reflector: Reflector) -> EnqueueKey:
        """How ``reflector``'s events are queued: as a resync until its first list is done."""

        def enqueue(key: str) -> None:
            (self._enqueue if reflector.synced else self._enqueue_resync)(key)

        return enqueue

    def _job_handler(self, reflector: Reflector) -> Handler:
        enqueue = self._enqueuer(reflector)

        def handle(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            if self.writes.observe(TFJOBS.plural, event_type, obj):
                return
            if not reflector.synced and not obj.get("status"):
                self._enqueue(object_key(obj))  # never reconciled: a change, not a resync
            else:
                enqueue(object_key(obj))

        return handle

    def _child_handler(self, res: Resource, enqueue: EnqueueKey) -> Handler:
        def handle(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            if res is PODS and self.unadmitted.quiet(event_type, obj):
                return  # the pass that made it sees the answer; an unadmitted one retries with back-off
            own_write = self.writes.observe(res.plural, event_type, obj)
            key = job_key_of_child(obj)
            if key is not None and not own_write:
                enqueue(key)
            # A child that changed hands (ownerReference or label edited) concerns its old job too.
            old_key = job_key_of_child(old) if old is not None else None
            if old_key is not None and old_key != key:
                enqueue(old_key)

        return handle

    def _podgroup_event_handler(self, enqueue: EnqueueKey) -> Handler:
        def handle(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            if event_type == "MODIFIED" and old is not None and old.get("message") == obj.get("message"):
                return
            key = job_key_of_podgroup_event(obj)
            if key is not None and event_type != "DELETED":
                enqueue(key)

        return handle

    def _namespace_handler(self, enqueue: EnqueueKey) -> Handler:
        def handle(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            admitted = event_type != "DELETED" and self.scope.admits(Meta(obj).labels)
            was_admitted = old is not None and self.scope.admits(Meta(old).labels)
            if event_type == "MODIFIED" and was_admitted == admitted:
                return
            for key in self.jobs.index_keys(NAMESPACE_INDEX, Meta(obj).name):
                enqueue(key)

        return handle

    def _priority_class_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if old is not None and _priority_value(old) == _priority_value(obj) and event_type == "MODIFIED":
            return
        for key in self.jobs:
            self._enqueue_resync(key)

    # -- reading -----------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        return all(reflector.synced for reflector in self.reflectors)

    async def wait_synced(self) -> None:
        for reflector in self.reflectors:
            await reflector.wait_synced()

    def in_scope(self, namespace: str) -> bool | None:
        """Whether ``namespace`` is served; None while the namespace is not known here yet (its
        watch event wakes its jobs)."""
        if self.scope.everywhere:
            return True
        found = self.namespaces.get(namespace)
        if found is None:
            return None
        return self.scope.admits(Meta(found).labels)

    def job(self, key: str) -> dict[str, Any] | None:
        namespace, _, name = key.partition("/")
        return self.writes.view(TFJOBS.plural, namespace, name, self.jobs.get(key))

    def observe(self, job: dict[str, Any]) -> Observed:
        """The job's children as this controller should see them, its own writes included."""
        meta = Meta(job)
        namespace, name, uid = meta.namespace, meta.name, meta.uid
        key = f"{namespace}/{name}"
        pods = self.writes.view_owned(PODS.plural, uid, self.pods.by_index(JOB_INDEX, key))
        if self.unadmitted:
            pods = [pod for pod in pods if Meta(pod).uid not in self.unadmitted]
        services = self.writes.view_owned(SERVICES.plural, uid, self.services.by_index(JOB_INDEX, key))
        podgroup = self.writes.view(self.podgroup_resource.plural, namespace, name, self.podgroups.get(key))
        priority_values = {Meta(pc).name: _priority_value(pc) for pc in self.priority_classes.list()}
        tfjob = as_tfjob(job)
        return Observed(
            job=tfjob,
            pods=pods,
            services=services,
            podgroup=as_podgroup(podgroup),
            priority_values=priority_values,
            podgroup_events=self.podgroup_events.by_index(JOB_INDEX, key),
            facts=self._facts.facts(tfjob),
        )
