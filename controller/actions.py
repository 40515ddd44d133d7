"""Carrying out the planner's actions against the API, idempotently.

Every action may be retried after a crash or a lost answer, so:

- a create that meets ``AlreadyExists`` succeeds when the existing object is controlled by this
  job (checked by reading it), and fails otherwise: we never adopt or overwrite a stranger's object;
- a delete names the uid it means (a precondition), so it never removes a newer object of the same
  name; ``NotFound`` or a failed uid precondition mean the object is already gone: success;
- every successful write is remembered in ``OwnWrites`` so the next pass reads its own writes;
- a pod that comes back without the mutating webhook's marks, created or found, is deleted at
  once and the action fails with ``NotAdmitted`` (``controller.admission``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from controller.admission import MutationCheck, NotAdmitted, Unadmitted, mutation_check
from controller.caches import METADATA_ONLY_ON_CREATE
from controller.metrics import ControllerMetrics
from controller.resources import TFJOBS, podgroup_resource
from kube.api import KubeApi
from kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from kube.ownwrites import OwnWrites
from kube.patches import PatchType
from kube.resources import PODS, SERVICES, Resource
from kubeobjects.meta import Meta
from tfjob.facts import read_facts
from tfjob.planner import Observed
from tfjob.planner.actions import Action, Create, CreatePod, Event, Kind, PatchPodGroup
from tfjob.settings import Settings

logger = logging.getLogger(__name__)


class ActionFailed(Exception):
    """An action could not be carried out; ``event`` is the Warning to record about the job."""

    def __init__(self, action: Action, cause: Exception, event: Event | None) -> None:
        super().__init__(f"{type(action).__name__}: {cause}")
        self.action = action
        self.cause = cause
        self.event = event


class NotOurs(Exception):
    """A create met an existing object of that name that is not a live child of this job."""


# What an action came to: the API changed something (created, patched, deleted), or the desired
# state already held (existed: a create met our own object; absent: a delete found nothing).
Result = Literal["created", "patched", "deleted", "existed", "absent"]
_CHANGED: tuple[Result, ...] = ("created", "patched", "deleted")
# The controller's upstream-named counters, by target and what the action came to (None: failed).
_COUNTERS: dict[tuple[Kind, Result | None], str] = {
    ("pods", "created"): "created_pods",
    ("pods", "deleted"): "deleted_pods",
    ("services", "created"): "service_creation_succeeded",
    ("services", None): "service_creation_failed",
    ("podgroups", "created"): "created_pod_groups",
    ("podgroups", "deleted"): "deleted_pod_groups",
}


@dataclass(frozen=True)
class Outcome:
    """A carried-out action: the event to record (if any) and whether the API changed anything."""

    event: Event | None
    changed: bool


class ActionRunner:
    def __init__(
        self,
        api: KubeApi,
        writes: OwnWrites,
        metrics: ControllerMetrics,
        settings: Settings = Settings(),
        unadmitted: Unadmitted | None = None,
    ) -> None:
        self._api = api
        self._settings = settings
        self._unadmitted = unadmitted if unadmitted is not None else Unadmitted()
        self._resources: dict[Kind, Resource] = {
            "pods": PODS,
            "services": SERVICES,
            "podgroups": podgroup_resource(settings),
            "tfjobs": TFJOBS,
        }
        self._writes = writes
        self._metrics = metrics

    async def run(self, observed: Observed, action: Action) -> Outcome:
        """Carry out one action for ``observed.job``; raise ``ActionFailed`` when it did not happen."""
        try:
            result = await self._dispatch(observed, action)
        except NotAdmitted as exc:
            self._count(action, None)
            raise ActionFailed(action, exc, exc.event()) from exc
        except (ApiError, NotOurs) as exc:
            self._count(action, None)
            raise ActionFailed(action, exc, action.failure_event(str(exc))) from exc
        self._count(action, result)
        # A create that found our own object reports nothing: some earlier pass made it. A delete
        # that found nothing still reports success, as upstream does.
        event = None if result == "existed" else action.success_event()
        return Outcome(event, result in _CHANGED)

    def _count(self, action: Action, result: Result | None) -> None:
        """Every metric about an action, in one place; ``None``: the action failed."""
        kind = action.target.kind
        if result in _CHANGED:
            self._metrics.count_write(self._resources[kind].plural, action.verb)
        counter = _COUNTERS.get((kind, result))
        if counter is not None:
            getattr(self._metrics, counter).inc()

    async def _dispatch(self, observed: Observed, action: Action) -> Result:
        meta = Meta(observed.job)
        namespace, job_uid = meta.namespace, meta.uid
        target = action.target
        res = self._resources[target.kind]
        if isinstance(action, PatchPodGroup):
            patched = await self._api.patch(
                res, target.name, action.patch, namespace, patch_type=PatchType.MERGE
            )
            self._writes.wrote(res.plural, patched)
            return "patched"
        if isinstance(action, CreatePod):
            facts = observed.facts if observed.facts is not None else read_facts(observed.job)
            check = mutation_check(facts, action.body, self._settings)
            return await self._create(res, dict(action.body), namespace, job_uid, check)
        if isinstance(action, Create):
            return await self._create(res, dict(action.body), namespace, job_uid)
        # The job itself has no owner whose children the overlay tracks.
        owner_uid = "" if target.kind == "tfjobs" else job_uid
        return await self._delete(res, target.name, namespace, target.uid or None, owner_uid)

    async def _create(
        self,
        res: Resource,
        body: dict[str, Any],
        namespace: str,
        job_uid: str,
        check: MutationCheck | None = None,
    ) -> Result:
        """Create ``body``, or find it already there as ours; ``check``: what admission must have added."""
        name = Meta(body).name
        metadata_only = res.plural in METADATA_ONLY_ON_CREATE and not (check is not None and check.needs_spec)
        try:
            if check is None:
                created = await self._api.create(res, body, namespace, metadata_only=metadata_only)
            else:
                with self._unadmitted.creating(namespace, name):
                    created = await self._api.create(res, body, namespace, metadata_only=metadata_only)
        except AlreadyExists:
            existing = await self._api.get(res, name, namespace)
            if Meta(existing).controller_uid != job_uid:
                raise NotOurs(
                    f"{res.kind} {namespace}/{name} already exists and is not controlled by this job"
                ) from None
            if Meta(existing).deleting:
                # Ours, but on its way out: the next pass makes a new one once it is gone.
                raise NotOurs(f"{res.kind} {namespace}/{name} is still terminating") from None
            if check is not None and not check.mutated(existing):
                await self._reject(existing, namespace)
            logger.info("%s %s/%s already exists and is ours", res.kind, namespace, name)
            self._writes.wrote(res.plural, existing)
            return "existed"
        if check is not None and not check.mutated(created):
            await self._reject(created, namespace)
        self._writes.wrote(res.plural, created)
        return "created"

    async def _reject(self, pod: dict[str, Any], namespace: str) -> None:
        """Delete a pod admission did not mutate, before anything runs it; raise ``NotAdmitted``."""
        meta = Meta(pod)
        self._unadmitted.add(meta.uid)
        try:
            await self._api.delete(
                PODS, meta.name, namespace, uid_precondition=meta.uid, grace_period_seconds=0
            )
        except (NotFound, Conflict):
            pass  # gone already
        except ApiError as exc:
            # The pod stays hidden from the planner; the job's retry finds it and deletes it again.
            logger.warning("could not delete unmutated pod %s/%s: %s", namespace, meta.name, exc)
        else:
            self._metrics.count_write(PODS.plural, "delete")
        raise NotAdmitted(meta.name, namespace)

    async def _delete(
        self, res: Resource, name: str, namespace: str, uid: str | None, owner_uid: str
    ) -> Result:
        """Delete ``name``, only if it is still ``uid``; "absent" when it was gone already."""
        try:
            await self._api.delete(
                res,
                name,
                namespace,
                uid_precondition=uid,
                propagation_policy="Background" if res is TFJOBS else None,
            )
        except NotFound:
            result: Result = "absent"
        except Conflict:
            # The uid precondition failed: the object we meant is gone, a newer one took its name.
            result = "absent"
        else:
            result = "deleted"
        if uid:
            self._writes.deleted(res.plural, namespace, name, uid, owner_uid)
        return result
