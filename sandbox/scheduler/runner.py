"""The scheduler's I/O: watch caches in, one pure session per tick, decisions out to the API.

Only ordinary API calls are used, so the same process works against a real kube-apiserver:
``pods/binding`` to bind, a strategic-merge patch of ``pods/status`` for ``PodScheduled`` (and
for ``DisruptionTarget`` before an evicted pod is deleted, as Volcano's evictor does),
PodGroup status by merge patch (of ``/status`` when the CRD has that subresource, of the object
otherwise, as Volcano's own CRD has none), Events through the aggregating recorder, and the
``default`` Queue created (and opened) when missing, as Volcano's install does.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kube.api import KubeApi
from kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from kube.events import EventRecorder
from kube.ownwrites import OwnWrites
from kube.patches import PatchType
from kube.reflector import Reflector
from kube.resources import NODES, PODGROUPS_V1BETA1, PODS, QUEUES_V1BETA1, Resource
from kube.store import Store
from kubeobjects.meta import Meta
from sandbox.scheduler.decisions import (
    Bind,
    EventNote,
    Evict,
    PodGroupStatusWrite,
    PodUnschedulable,
    SessionResult,
)
from sandbox.scheduler.gang import GangConfig
from sandbox.scheduler.pgcontroller import implicit_groups
from sandbox.scheduler.session import run_session
from sandbox.scheduler.snapshot import (
    GROUP_NAME_ANNOTATION,
    SchedulerName,
    build_snapshot,
)

logger = logging.getLogger(__name__)
T = TypeVar("T")

QUEUE_RETRY_SECONDS = 30.0
# Volcano's network topology (cluster-scoped); a server without its CRD lists none.
HYPERNODES = Resource("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", namespaced=False)


async def _unless_gone(what: str, write: Awaitable[T]) -> T | None:
    """The write's answer, or None when it did not land: quietly when the object is gone, else with a
    warning. Nothing is retried here: the next session decides again from what the caches then show."""
    try:
        return await write
    except NotFound:
        return None
    except ApiError as error:
        logger.warning("%s failed: %s", what, error)
        return None


@dataclass(frozen=True)
class SchedulerOptions:
    period: float = 1.0
    """Seconds between sessions when nothing changes (Volcano's schedule period)."""
    min_interval: float = 1.0
    """Least seconds between sessions. Equal to ``period`` (the default), sessions are strictly
    periodic as in Volcano, so what changes within one period is seen together; tests lower it
    to react to changes at once."""
    overcommit_factor: float = 1.2
    gang_scheduler_names: frozenset[str] = field(default_factory=lambda: frozenset({SchedulerName.VOLCANO}))
    plain_scheduler_names: frozenset[str] = field(default_factory=lambda: frozenset({SchedulerName.DEFAULT}))
    default_queue: str = "default"
    volcano_sync_grace: float = 10.0
    """Seconds to wait for the PodGroup and Queue caches before scheduling plain pods regardless
    (a server without Volcano's CRDs never lists them)."""


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_queue_body(name: str) -> dict[str, Any]:
    return {
        "apiVersion": QUEUES_V1BETA1.api_version,
        "kind": QUEUES_V1BETA1.kind,
        "metadata": {"name": name},
        "spec": {"weight": 1, "reclaimable": True},
    }


def podgroup_status_patch(write: PodGroupStatusWrite) -> dict[str, Any]:
    """A merge patch that makes the stored status exactly ``write.status`` (absent keys removed)."""
    status: dict[str, Any] = {"phase": write.status["phase"], "conditions": None}
    status.update({key: None for key in ("running", "succeeded", "failed")})
    status.update(write.status)
    return {"status": status}


class Scheduler:
    def __init__(
        self,
        api: KubeApi,
        recorder: EventRecorder,
        options: SchedulerOptions = SchedulerOptions(),
        *,
        plain_recorder: EventRecorder | None = None,
    ) -> None:
        """Volcano's events go to ``recorder``, the plain scheduler's to ``plain_recorder`` (or the same)."""
        self._api = api
        self._recorders = {SchedulerName.VOLCANO: recorder, SchedulerName.DEFAULT: plain_recorder or recorder}
        self._options = options
        self._wake = asyncio.Event()
        # Our binds and status writes over the caches until the watches bring them back.
        self._writes = OwnWrites(ttl=30.0)
        self._stores = {
            res.plural: Store() for res in (PODS, NODES, PODGROUPS_V1BETA1, QUEUES_V1BETA1, HYPERNODES)
        }
        self._podgroup_status_subresource: bool | None = None
        self._opened_queues: set[str] = set()
        self._default_queue_ready = False
        self._queue_checked_at = 0.0
        self.sessions = 0

    def _changed(self, plural: str) -> Callable[[str, dict[str, Any], dict[str, Any] | None], None]:
        def changed(event_type: str, obj: dict[str, Any], _old: dict[str, Any] | None) -> None:
            self._writes.observe(plural, event_type, obj)
            self._wake.set()

        return changed

    async def ensure_default_queue(self) -> bool:
        """Create the default Queue when missing; False when this server has no Volcano Queue type."""
        self._queue_checked_at = time.monotonic()
        try:
            await self._api.create(QUEUES_V1BETA1, default_queue_body(self._options.default_queue))
            logger.info("created the %s queue", self._options.default_queue)
        except AlreadyExists:
            pass
        except NotFound:
            logger.warning(
                "this API server has no %s (Volcano's CRDs): only plain pods are scheduled", QUEUES_V1BETA1
            )
            return False
        self._default_queue_ready = True
        return True

    async def run(self) -> None:
        await self.ensure_default_queue()
        core = [
            Reflector(self._api, res, self._stores[res.plural], handlers=[self._changed(res.plural)])
            for res in (PODS, NODES)
        ]
        volcano = [
            Reflector(self._api, res, self._stores[res.plural], handlers=[self._changed(res.plural)])
            for res in (PODGROUPS_V1BETA1, QUEUES_V1BETA1, HYPERNODES)
        ]
        async with asyncio.TaskGroup() as group:
            for reflector in core + volcano:
                group.create_task(reflector.run())
            for reflector in core:
                await reflector.wait_synced()
            for reflector in volcano:
                try:
                    async with asyncio.timeout(self._options.volcano_sync_grace):
                        await reflector.wait_synced()
                except TimeoutError:
                    logger.warning(
                        "no PodGroups or Queues listed yet (%s); scheduling meanwhile", reflector.last_error
                    )
            logger.info("scheduler caches synced; scheduling")
            group.create_task(self._loop())

    async def _loop(self) -> None:
        # Sessions fall on a fixed grid of ``min_interval`` ticks, as Volcano's run on its fixed
        # schedule period: a change wakes the scheduler, but the session waits for the next tick,
        # so a burst of changes (a controller deleting a job's pods and then its PodGroup) is seen
        # together instead of being split by a session that starts the moment the first one lands.
        origin = time.monotonic()
        tick = max(self._options.min_interval, 1e-3)
        while True:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancellation
            # that arrives as the wake-up does, and the scheduler would then never stop.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._options.period):
                    await self._wake.wait()
            now = time.monotonic()
            await asyncio.sleep(max(0.0, origin + math.ceil((now - origin) / tick) * tick - now))
            self._wake.clear()
            try:
                await self.run_once()
            except ApiError as error:
                logger.warning("scheduling session failed: %s", error)

    def _objects(self, plural: str) -> list[dict[str, Any]]:
        seen = []
        for cached in self._stores[plural].list():
            meta = Meta(cached)
            obj = self._writes.view(plural, meta.namespace, meta.name, cached)
            if obj is not None:
                seen.append(obj)
        return seen

    async def run_once(self) -> SessionResult:
        """One session over the current caches, carried out against the API."""
        if not self._default_queue_ready and time.monotonic() - self._queue_checked_at > QUEUE_RETRY_SECONDS:
            await self.ensure_default_queue()
        await self._open_queues()
        await self._group_loose_pods()
        snapshot = build_snapshot(
            self._objects("nodes"),
            self._objects("pods"),
            self._objects("podgroups"),
            self._objects("queues"),
            self._objects("hypernodes"),
            gang_scheduler_names=self._options.gang_scheduler_names,
            plain_scheduler_names=self._options.plain_scheduler_names,
        )
        for problem in snapshot.problems:
            logger.warning("skipping unreadable object: %s", problem)
        result = run_session(snapshot, _now(), str(uuid.uuid4()), GangConfig(self._options.overcommit_factor))
        self.sessions += 1
        await asyncio.gather(*(self._bind(bind) for bind in result.binds))
        await asyncio.gather(*(self._write_podgroup(write) for write in result.podgroup_writes))
        await asyncio.gather(*(self._set_unschedulable(update) for update in result.pod_conditions))
        await asyncio.gather(*(self._evict(eviction) for eviction in result.evictions))
        for note in result.events:
            self._record(note)
        return result

    async def _group_loose_pods(self) -> None:
        """The pg-controller's job: Volcano pods without a PodGroup get ``podgroup-<owner uid>``."""
        for loose in implicit_groups(self._objects("pods"), self._options.gang_scheduler_names):
            key = f"{loose.namespace}/{loose.group}"
            if key not in self._stores["podgroups"]:
                try:
                    await self._api.create(PODGROUPS_V1BETA1, dict(loose.body), loose.namespace)
                    logger.info("created podgroup %s for pod %s", key, loose.pod)
                except AlreadyExists:
                    pass
                except ApiError as error:
                    logger.warning("creating podgroup %s failed: %s", key, error)
                    continue
            annotation = {"metadata": {"annotations": {GROUP_NAME_ANNOTATION: loose.group}}}
            patched = await _unless_gone(
                f"annotating pod {loose.namespace}/{loose.pod}",
                self._api.patch(PODS, loose.pod, annotation, loose.namespace, patch_type=PatchType.STRATEGIC),
            )
            if patched is not None:
                self._writes.wrote("pods", patched)

    async def _open_queues(self) -> None:
        """Volcano's queue controller opens new queues; in the sandbox nobody else will."""
        for queue in self._stores["queues"].list():
            name = str((queue.get("metadata") or {}).get("name", ""))
            if (queue.get("status") or {}).get("state") or name in self._opened_queues:
                continue
            self._opened_queues.add(name)
            body = {"status": {"state": "Open"}}
            try:
                opened = await self._api.patch(
                    QUEUES_V1BETA1, name, body, patch_type=PatchType.MERGE, subresource="status"
                )
            except NotFound:
                opened = await self._api.patch(QUEUES_V1BETA1, name, body, patch_type=PatchType.MERGE)
            self._writes.wrote("queues", opened)
            logger.info("opened queue %s", name)

    async def _bind(self, bind: Bind) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": bind.name, "namespace": bind.namespace, "uid": bind.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": bind.node},
        }
        key = bind.key
        cached = self._stores["pods"].get(key)
        try:
            await self._api.create(
                PODS, body, bind.namespace, subresource_of=bind.name, subresource="binding"
            )
        except (Conflict, NotFound) as error:
            logger.info("could not bind %s to %s: %s", key, bind.node, error)
            return
        except ApiError as error:
            logger.warning("binding %s to %s failed: %s", key, bind.node, error)
            return
        logger.info("bound %s to %s", key, bind.node)
        message = f"Successfully assigned {key} to {bind.node}"
        self._record(EventNote.about_pod(bind, "Normal", "Scheduled", message, bind.source))
        if cached is not None:
            assumed = copy.deepcopy(cached)
            assumed.setdefault("spec", {})["nodeName"] = bind.node
            self._writes.wrote("pods", assumed, assumed=True)

    async def _write_podgroup(self, write: PodGroupStatusWrite) -> None:
        key = write.key
        body = podgroup_status_patch(write)
        written = await _unless_gone(
            f"writing the status of podgroup {key}", self._patch_podgroup_status(write, body)
        )
        if written is None:
            return
        self._writes.wrote("podgroups", written)
        logger.info("podgroup %s: phase %s", key, write.status["phase"])

    async def _patch_podgroup_status(
        self, write: PodGroupStatusWrite, body: dict[str, Any]
    ) -> dict[str, Any]:
        if self._podgroup_status_subresource is not False:
            try:
                written = await self._api.patch(
                    PODGROUPS_V1BETA1,
                    write.name,
                    body,
                    write.namespace,
                    patch_type=PatchType.MERGE,
                    subresource="status",
                )
                self._podgroup_status_subresource = True
                return written
            except NotFound:
                if self._podgroup_status_subresource:
                    raise
                self._podgroup_status_subresource = False
        return await self._api.patch(
            PODGROUPS_V1BETA1, write.name, body, write.namespace, patch_type=PatchType.MERGE
        )

    async def _set_unschedulable(self, update: PodUnschedulable) -> None:
        body = {"status": {"conditions": [dict(update.condition)]}}
        await _unless_gone(
            f"setting PodScheduled on {update.key}",
            self._api.patch(
                PODS,
                update.name,
                body,
                update.namespace,
                patch_type=PatchType.STRATEGIC,
                subresource="status",
            ),
        )

    async def _evict(self, eviction: Evict) -> None:
        """Volcano's ``defaultEvictor.Evict``: the pod's conditions say why, then it is deleted."""
        now = _now()
        evicted = f"Pod is evicted, because of {eviction.why}"
        conditions = [
            {"type": "Ready", "status": "False", "reason": "Evict", "message": evicted,
             "lastProbeTime": None, "lastTransitionTime": now},
            {"type": "DisruptionTarget", "status": "True", "reason": eviction.reason,
             "message": eviction.message, "lastProbeTime": None, "lastTransitionTime": now},
        ]  # fmt: skip
        marked = await _unless_gone(
            f"marking {eviction.key} for eviction",
            self._api.patch(
                PODS,
                eviction.name,
                {"status": {"conditions": conditions}},
                eviction.namespace,
                patch_type=PatchType.STRATEGIC,
                subresource="status",
            ),
        )
        if marked is None:
            return
        self._record(EventNote.about_pod(eviction, "Warning", "Evict", evicted))
        await _unless_gone(
            f"evicting {eviction.key}",
            self._api.delete(PODS, eviction.name, eviction.namespace, uid_precondition=eviction.uid),
        )
        logger.info("evicted %s (%s)", eviction.key, eviction.reason)

    def _record(self, note: EventNote) -> None:
        involved = {
            "apiVersion": note.api_version,
            "kind": note.kind,
            "metadata": {"name": note.name, "namespace": note.namespace, "uid": note.uid},
        }
        self._recorders[note.source].record(involved, note.type, note.reason, note.message)
