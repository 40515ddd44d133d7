"""Deletion: preconditions, finalizers, graceful pod deletion, propagation and garbage collection.

Pods bound to a node whose agent heartbeats are deleted gracefully: they get a deletionTimestamp
and deletionGracePeriodSeconds and disappear when the node agent deletes them with grace 0.
Others go at once. Owner references are collected like kube-controller-manager's garbage
collector: Background (owner first, dependents soon after), Foreground (dependents first, the
owner waits with the ``foregroundDeletion`` finalizer), Orphan (owner references removed).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from dataclasses import dataclass, field
from typing import Any

from sandbox.apiserver import errors, objects
from sandbox.apiserver.auth import UserInfo
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.operations import RequestContext, admission_attributes, update
from sandbox.apiserver.registry import CRDS, NAMESPACES, PODS, SERVICES, ResourceInfo, StorageKey
from sandbox.apiserver.state import ApiState, timestamp
from sandbox.apiserver.storage import ObjectRef, StoredEvent

logger = logging.getLogger(__name__)


FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
RETURN_DELETED_OBJECT = frozenset({PODS, SERVICES, CRDS})
PROTECTED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
GC_USER = UserInfo(
    "system:serviceaccount:kube-system:generic-garbage-collector",
    ("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"),
)
NAMESPACE_USER = UserInfo(
    "system:serviceaccount:kube-system:namespace-controller",
    ("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"),
)


@dataclass(frozen=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation: str | None = None
    precondition_uid: str | None = None
    precondition_resource_version: str | None = None


def parse_delete_options(body: Any, query: dict[str, str]) -> DeleteOptions:
    data = body if isinstance(body, dict) else {}
    grace: Any = data.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
    propagation = data.get("propagationPolicy", query.get("propagationPolicy"))
    orphan = data.get("orphanDependents", query.get("orphanDependents"))
    if propagation is None and orphan is not None:
        propagation = "Orphan" if str(orphan).lower() == "true" else "Background"
    if propagation not in (None, "Foreground", "Background", "Orphan"):
        raise errors.bad_request(
            f'propagationPolicy: Unsupported value: "{propagation}": supported values: '
            '"Foreground", "Background", "Orphan"'
        )
    preconditions = data.get("preconditions") or {}
    try:
        grace_value = int(grace) if grace is not None else None
    except (TypeError, ValueError) as exc:
        raise errors.bad_request(f"invalid gracePeriodSeconds: {grace}") from exc
    return DeleteOptions(
        grace_value, propagation, preconditions.get("uid"), preconditions.get("resourceVersion")
    )


def _grace_for(state: ApiState, info: ResourceInfo, obj: JsonObj, options: DeleteOptions) -> int:
    if info.storage_key != PODS:
        return 0
    spec = obj.get("spec") or {}
    grace = options.grace_period_seconds
    if grace is None:
        grace = int(spec.get("terminationGracePeriodSeconds", 30))
    phase = (obj.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed") or not state.node_agent_serves(str(spec.get("nodeName") or "")):
        return 0
    return max(grace, 0)


@dataclass
class Deleter:
    state: ApiState
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def install(self) -> None:
        self.state.storage.listeners.append(self._on_event)

    def _spawn(self, coroutine: Any) -> None:
        try:
            task = asyncio.get_running_loop().create_task(coroutine)
        except RuntimeError:
            coroutine.close()
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def idle(self) -> None:
        """Wait until no collection task is pending (tests and benchmarks use it)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # --- the delete verb -------------------------------------------------------------------------
    async def delete(
        self, info: ResourceInfo, namespace: str, name: str, options: DeleteOptions, ctx: RequestContext
    ) -> JsonObj:
        storage = self.state.storage
        existing = storage.get(info.storage_key, namespace, name)
        if existing is None:
            raise errors.not_found(info.resource, info.group, name)
        meta = existing.get("metadata") or {}
        if options.precondition_uid and options.precondition_uid != meta.get("uid"):
            raise errors.conflict(
                info.resource,
                info.group,
                name,
                f"Precondition failed: UID in precondition: {options.precondition_uid}, "
                f"UID in object meta: {meta.get('uid')}",
            )
        if options.precondition_resource_version and options.precondition_resource_version != meta.get(
            "resourceVersion"
        ):
            raise errors.conflict(
                info.resource,
                info.group,
                name,
                f"Precondition failed: ResourceVersion in precondition: "
                f"{options.precondition_resource_version}, ResourceVersion in object meta: "
                f"{meta.get('resourceVersion')}",
            )
        if info.storage_key == NAMESPACES and name in PROTECTED_NAMESPACES:
            raise errors.forbidden("namespaces", "", name, "this namespace may not be deleted")
        attrs = admission_attributes(info, "", namespace, name, "DELETE", ctx, "DeleteOptions")
        served_old = objects.served(info, existing)
        await self.state.admission.mutate(attrs, None, served_old, ctx.warnings)
        await self.state.admission.validate(attrs, None, served_old, ctx.warnings)
        if ctx.dry_run:
            return served_old
        existing = storage.get(info.storage_key, namespace, name)
        if existing is None:
            raise errors.not_found(info.resource, info.group, name)
        if info.storage_key == NAMESPACES:
            return self._start_namespace_deletion(info, existing)
        return self._delete_now_or_mark(info, existing, options)

    def _delete_now_or_mark(self, info: ResourceInfo, existing: JsonObj, options: DeleteOptions) -> JsonObj:
        storage = self.state.storage
        meta = existing["metadata"]
        namespace, name = str(meta.get("namespace") or ""), str(meta["name"])
        uid = str(meta.get("uid", ""))
        dependents = storage.dependents_of(uid)
        propagation = options.propagation or "Background"
        finalizers = list(meta.get("finalizers") or [])
        if propagation == "Orphan" and dependents:
            self._orphan(uid, dependents)
        if propagation == "Foreground" and dependents and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        grace = _grace_for(self.state, info, existing, options)
        if meta.get("deletionTimestamp"):
            current_grace = int(meta.get("deletionGracePeriodSeconds") or 0)
            if grace >= current_grace and finalizers == list(meta.get("finalizers") or []):
                if current_grace == 0 and not finalizers:
                    return self._deleted(info, storage.remove(info.storage_key, namespace, name) or existing)
                return objects.served(info, existing)
        if grace > 0 or finalizers:
            marked = objects.clone(existing)
            marked_meta = marked["metadata"]
            deadline = self.state.now() + datetime.timedelta(seconds=grace)
            if not marked_meta.get("deletionTimestamp") or grace < int(
                marked_meta.get("deletionGracePeriodSeconds") or 0
            ):
                marked_meta["deletionTimestamp"] = timestamp(deadline)
            marked_meta["deletionGracePeriodSeconds"] = grace
            if finalizers:
                marked_meta["finalizers"] = finalizers
            stored = storage.put(info.storage_key, marked, "MODIFIED")
            if FOREGROUND in finalizers:
                self._spawn(self._delete_dependents(uid, "Foreground"))
            return objects.served(info, stored)
        removed = storage.remove(info.storage_key, namespace, name)
        return self._deleted(info, removed or existing)

    @staticmethod
    def _deleted(info: ResourceInfo, obj: JsonObj) -> JsonObj:
        """What DELETE answers once the object is gone: the object itself for the kinds whose storage
        returns deleted objects (pods, services, CRDs, custom resources), else a Success Status."""
        if info.is_custom or info.storage_key in RETURN_DELETED_OBJECT:
            return objects.served(info, obj)
        meta = obj.get("metadata") or {}
        details = {
            "name": meta.get("name", ""),
            "group": info.group,
            "kind": info.resource,
            "uid": meta.get("uid"),
        }
        if not info.group:
            del details["group"]
        return errors.success_body(details)

    def _orphan(self, owner_uid: str, dependents: list[ObjectRef]) -> None:
        for ref in dependents:
            dependent = self.state.storage.get(ref.key, ref.namespace, ref.name)
            if dependent is None:
                continue
            changed = objects.clone(dependent)
            refs = [o for o in changed["metadata"].get("ownerReferences") or [] if o.get("uid") != owner_uid]
            if refs:
                changed["metadata"]["ownerReferences"] = refs
            else:
                changed["metadata"].pop("ownerReferences", None)
            self.state.storage.put(ref.key, changed, "MODIFIED")

    # --- namespaces ------------------------------------------------------------------------------
    def _start_namespace_deletion(self, info: ResourceInfo, namespace: JsonObj) -> JsonObj:
        if (namespace.get("metadata") or {}).get("deletionTimestamp"):
            return objects.served(info, namespace)
        marked = objects.clone(namespace)
        marked["metadata"]["deletionTimestamp"] = timestamp(self.state.now())
        marked["metadata"]["deletionGracePeriodSeconds"] = 0
        marked["status"] = {"phase": "Terminating"}
        stored = self.state.storage.put(NAMESPACES, marked, "MODIFIED")
        self._spawn(self._finish_namespace(str(marked["metadata"]["name"])))
        return objects.served(info, stored)

    async def _finish_namespace(self, name: str) -> None:
        storage = self.state.storage
        for _round in range(600):
            keys = [key for key in storage.namespaces_with_objects(name) if key != NAMESPACES]
            if not keys:
                storage.remove(NAMESPACES, "", name)
                return
            for key in keys:
                info = self.state.registry.preferred(key)
                for obj in storage.list_in(key, name):
                    if info is None:
                        storage.remove(key, name, str(obj["metadata"]["name"]))
                    elif not (obj.get("metadata") or {}).get("deletionTimestamp"):
                        await self._delete_quietly(info, obj, "Background", NAMESPACE_USER)
            await asyncio.sleep(0.1)
        logger.warning("namespace %s still has content; leaving it Terminating", name)

    # --- garbage collection ----------------------------------------------------------------------
    def _on_event(self, event: StoredEvent) -> None:
        if event.type != "DELETED":
            return
        meta = event.object.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        if event.key == SERVICES:
            cluster_ip = (event.object.get("spec") or {}).get("clusterIP")
            if cluster_ip and cluster_ip != "None":
                self.state.cluster_ips.release(str(cluster_ip))
        if event.key == CRDS:
            self._spawn(self._remove_custom_resources(event.object))
        if uid and self.state.storage.dependents_of(uid):
            self._spawn(self._collect(uid))
        for owner in meta.get("ownerReferences") or []:
            self._spawn(self._release_foreground_owner(str(owner.get("uid", ""))))

    async def _remove_custom_resources(self, crd: JsonObj) -> None:
        """A deleted CRD takes its objects with it and its resource leaves discovery."""
        spec = crd.get("spec") or {}
        key = StorageKey(str(spec.get("group", "")), str((spec.get("names") or {}).get("plural", "")))
        self.state.registry.remove_crd(str((crd.get("metadata") or {}).get("name", "")))
        for obj in self.state.storage.list_in(key, None):
            meta = obj.get("metadata") or {}
            self.state.storage.remove(key, str(meta.get("namespace") or ""), str(meta.get("name", "")))

    async def _delete_quietly(
        self, info: ResourceInfo, obj: JsonObj, propagation: str, user: UserInfo
    ) -> None:
        meta = obj.get("metadata") or {}
        ctx = RequestContext(user)
        try:
            await self.delete(
                info,
                str(meta.get("namespace") or ""),
                str(meta.get("name")),
                DeleteOptions(propagation=propagation, precondition_uid=meta.get("uid")),
                ctx,
            )
        except errors.ApiError as error:
            if error.code not in (404, 409):
                logger.warning(
                    "garbage collector could not delete %s %s: %s", info.resource, meta.get("name"), error
                )

    async def _collect(self, owner_uid: str) -> None:
        storage = self.state.storage
        for ref in storage.dependents_of(owner_uid):
            dependent = storage.get(ref.key, ref.namespace, ref.name)
            info = self.state.registry.preferred(ref.key)
            if dependent is None or info is None:
                continue
            owners = dependent["metadata"].get("ownerReferences") or []
            alive = [o for o in owners if storage.by_uid(str(o.get("uid", ""))) is not None]
            if alive:
                if len(alive) != len(owners):
                    changed = objects.clone(dependent)
                    changed["metadata"]["ownerReferences"] = alive
                    storage.put(ref.key, changed, "MODIFIED")
                continue
            if not dependent["metadata"].get("deletionTimestamp"):
                await self._delete_quietly(info, dependent, "Background", GC_USER)

    async def _delete_dependents(self, owner_uid: str, propagation: str) -> None:
        storage = self.state.storage
        for ref in storage.dependents_of(owner_uid):
            dependent = storage.get(ref.key, ref.namespace, ref.name)
            info = self.state.registry.preferred(ref.key)
            if dependent is None or info is None or dependent["metadata"].get("deletionTimestamp"):
                continue
            await self._delete_quietly(info, dependent, propagation, GC_USER)
        await self._release_foreground_owner(owner_uid)

    async def _release_foreground_owner(self, owner_uid: str) -> None:
        storage = self.state.storage
        ref = storage.by_uid(owner_uid)
        if ref is None:
            return
        owner = storage.get(ref.key, ref.namespace, ref.name)
        if owner is None or FOREGROUND not in (owner["metadata"].get("finalizers") or []):
            return
        for dependent_ref in storage.dependents_of(owner_uid):
            dependent = storage.get(dependent_ref.key, dependent_ref.namespace, dependent_ref.name)
            if dependent is None:
                continue
            for owner_reference in dependent["metadata"].get("ownerReferences") or []:
                if owner_reference.get("uid") == owner_uid and owner_reference.get("blockOwnerDeletion"):
                    return
        info = self.state.registry.preferred(ref.key)
        if info is None:
            return
        released = objects.clone(owner)
        released["metadata"]["finalizers"] = [
            f for f in released["metadata"]["finalizers"] if f != FOREGROUND
        ]
        try:
            await update(
                self.state,
                info,
                ref.namespace,
                ref.name,
                "",
                objects.served(info, released),
                RequestContext(GC_USER),
            )
        except errors.ApiError as error:
            logger.debug("could not release foreground owner %s: %s", ref.name, error)
