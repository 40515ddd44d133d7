"""Per-kind preparation of objects on create and update (defaults, allocation, status rules)."""

from __future__ import annotations

import copy
import json
import secrets
from collections.abc import Callable
from typing import Any

from sandbox.apiserver import conversion, defaults, errors, registry, validation
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.registry import ResourceInfo, StorageKey
from sandbox.apiserver.state import ApiState, timestamp

_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def clone(obj: Any) -> Any:
    return json.loads(json.dumps(obj))


def generated_name(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_NAME_SUFFIX_ALPHABET) for _ in range(5))


def served(info: ResourceInfo, obj: JsonObj) -> JsonObj:
    """The stored object as the client asked for it (group/version of the request)."""
    shown = conversion.from_storage(info.group, info.resource, obj)
    if shown is obj:
        shown = dict(obj)
    shown["apiVersion"] = info.api_version
    shown["kind"] = info.kind
    return shown


def _sync_ips(status: JsonObj) -> None:
    """kube-apiserver keeps podIP/podIPs and hostIP/hostIPs consistent."""
    for single, plural in (("podIP", "podIPs"), ("hostIP", "hostIPs")):
        if status.get(single) and not status.get(plural):
            status[plural] = [{"ip": status[single]}]
        elif status.get(plural) and not status.get(single):
            status[single] = status[plural][0].get("ip", "")


def _pod_priority(state: ApiState, pod: JsonObj) -> tuple[int, str]:
    spec = pod.get("spec") or {}
    class_name = spec.get("priorityClassName")
    if class_name:
        found = state.storage.get(registry.PRIORITY_CLASSES, "", str(class_name))
        if found is None:
            name = (pod.get("metadata") or {}).get("name") or (pod.get("metadata") or {}).get(
                "generateName", ""
            )
            raise errors.forbidden(
                "pods", "", str(name), f"no PriorityClass with name {class_name} was found"
            )
        return int(found.get("value", 0)), str(found.get("preemptionPolicy", "PreemptLowerPriority"))
    for priority_class in state.storage.list_in(registry.PRIORITY_CLASSES, None):
        if priority_class.get("globalDefault"):
            spec["priorityClassName"] = priority_class["metadata"]["name"]
            return int(priority_class.get("value", 0)), str(
                priority_class.get("preemptionPolicy", "PreemptLowerPriority")
            )
    return int(spec.get("priority") or 0), "PreemptLowerPriority"


def _crd_status(crd: JsonObj, now: str) -> JsonObj:
    spec = crd.get("spec") or {}
    versions = spec.get("versions") or []
    stored = [v.get("name") for v in versions if v.get("storage")] or [v.get("name") for v in versions[:1]]
    conditions = [
        {
            "type": "NamesAccepted",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "NoConflicts",
            "message": "no conflicts found",
        },
        {
            "type": "Established",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
        },
    ]
    return {"acceptedNames": spec.get("names") or {}, "conditions": conditions, "storedVersions": stored}


def prepare_create(state: ApiState, info: ResourceInfo, obj: JsonObj) -> list[str]:
    """Apply kind defaults to a new object; return unknown (pruned) field paths of custom resources."""
    if info.is_custom:
        if info.has_status:
            obj.pop("status", None)
        return validation.decode_custom(info, obj)
    prepare = ON_CREATE.get(info.storage_key)
    if prepare is not None:
        prepare(state, obj)
    return []


def default_after_admission(state: ApiState, info: ResourceInfo, obj: JsonObj) -> None:
    """Defaults again on a webhook-patched object: kube-apiserver decodes (and so defaults) it anew."""
    if info.is_custom:
        prepare_create(state, info, obj)
    elif info.storage_key == registry.PODS:
        defaults.default_pod_spec(obj.setdefault("spec", {}))
    elif info.storage_key == registry.SERVICES:
        defaults.default_service(obj)


def _allocate_cluster_ip(state: ApiState, service: JsonObj) -> None:
    spec = service["spec"]
    if spec.get("type") == "ExternalName":
        return
    cluster_ip = spec.get("clusterIP") or ""
    if not cluster_ip:
        cluster_ip = state.cluster_ips.allocate()
        spec["clusterIP"] = cluster_ip
    elif cluster_ip != "None":
        state.cluster_ips.reserve(cluster_ip)
    spec.setdefault("clusterIPs", [cluster_ip])


IMMUTABLE_METADATA = (
    "uid",
    "creationTimestamp",
    "name",
    "namespace",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
)


def prepare_update(
    state: ApiState, info: ResourceInfo, subresource: str, new: JsonObj, old: JsonObj
) -> list[str]:
    """Merge an update onto the stored object the way the kind's strategy does; return unknown fields."""
    meta = new.setdefault("metadata", {})
    old_meta = old.get("metadata") or {}
    for name in IMMUTABLE_METADATA:
        if name in old_meta:
            meta[name] = old_meta[name]
        else:
            meta.pop(name, None)
    if subresource == "status":
        status = new.get("status")
        new.clear()
        new.update(clone(old))
        if status is None:
            new.pop("status", None)
        else:
            new["status"] = status
    elif info.has_status:
        if "status" in old:
            new["status"] = clone(old["status"])
        else:
            new.pop("status", None)
    unknown: list[str] = []
    if info.is_custom:
        unknown = validation.decode_custom(info, new)
    else:
        prepare = ON_UPDATE.get(info.storage_key)
        if prepare is not None:
            prepare(state, new, old, subresource)
    _bump_generation(info, new, old)
    return unknown


# --- per-kind strategies, as kube-apiserver's PrepareForCreate and PrepareForUpdate -----------------
Prepare = Callable[[ApiState, JsonObj], None]
PrepareUpdate = Callable[[ApiState, JsonObj, JsonObj, str], None]
"""(state, new, old, subresource): the update already carries the stored status and metadata rules."""


def _defaults(default: Callable[[JsonObj], None]) -> Prepare:
    return lambda _state, obj: default(obj)


def _webhooks(mutating: bool) -> Prepare:
    return lambda _state, configuration: defaults.default_webhook_configuration(configuration, mutating)


def _create_pod(state: ApiState, pod: JsonObj) -> None:
    priority, preemption = _pod_priority(state, pod)
    defaults.default_pod(pod, priority, preemption)


def _create_service(state: ApiState, service: JsonObj) -> None:
    defaults.default_service(service)
    _allocate_cluster_ip(state, service)


def _default_crd(state: ApiState, crd: JsonObj) -> None:
    defaults.default_crd(crd)
    crd["status"] = _crd_status(crd, timestamp(state.now()))


def _create_event(_state: ApiState, event: JsonObj) -> None:
    event.setdefault("involvedObject", {})


def _create_secret(_state: ApiState, secret: JsonObj) -> None:
    if not secret.get("type"):
        secret["type"] = "Opaque"


ON_CREATE: dict[StorageKey, Prepare] = {
    registry.PODS: _create_pod,
    registry.SERVICES: _create_service,
    registry.NAMESPACES: _defaults(defaults.default_namespace),
    registry.CRDS: _default_crd,
    registry.MUTATING_WEBHOOKS: _webhooks(mutating=True),
    registry.VALIDATING_WEBHOOKS: _webhooks(mutating=False),
    registry.PRIORITY_CLASSES: _defaults(defaults.default_priority_class),
    registry.DEPLOYMENTS: _defaults(defaults.default_deployment),
    registry.EVENTS: _create_event,
    registry.SECRETS: _create_secret,
}


def _as_on_create(prepare: Prepare) -> PrepareUpdate:
    return lambda state, new, _old, _subresource: prepare(state, new)


def _update_pod(_state: ApiState, new: JsonObj, _old: JsonObj, _subresource: str) -> None:
    defaults.default_pod_spec(new.setdefault("spec", {}))
    _sync_ips(new.setdefault("status", {}))


def _update_service(_state: ApiState, new: JsonObj, old: JsonObj, _subresource: str) -> None:
    defaults.default_service(new)
    old_spec = old.get("spec") or {}
    spec = new["spec"]
    for field_name in ("clusterIP", "clusterIPs"):
        if not spec.get(field_name) and old_spec.get(field_name):
            spec[field_name] = old_spec[field_name]


def _update_crd(state: ApiState, new: JsonObj, _old: JsonObj, subresource: str) -> None:
    if subresource != "status":
        _default_crd(state, new)


def _update_namespace(_state: ApiState, new: JsonObj, old: JsonObj, subresource: str) -> None:
    new["status"] = clone(old.get("status") or {}) if subresource != "status" else new.get("status", {})


ON_UPDATE: dict[StorageKey, PrepareUpdate] = {
    registry.PODS: _update_pod,
    registry.SERVICES: _update_service,
    registry.CRDS: _update_crd,
    registry.MUTATING_WEBHOOKS: _as_on_create(ON_CREATE[registry.MUTATING_WEBHOOKS]),
    registry.VALIDATING_WEBHOOKS: _as_on_create(ON_CREATE[registry.VALIDATING_WEBHOOKS]),
    registry.NAMESPACES: _update_namespace,
}


# Built-in kinds whose strategies keep metadata.generation (custom resources always do).
GENERATION_KINDS = frozenset(
    {
        registry.PODS,
        registry.DEPLOYMENTS,
        registry.CRDS,
        registry.MUTATING_WEBHOOKS,
        registry.VALIDATING_WEBHOOKS,
    }
)


def tracks_generation(info: ResourceInfo) -> bool:
    return info.is_custom or info.storage_key in GENERATION_KINDS


def _bump_generation(info: ResourceInfo, new: JsonObj, old: JsonObj) -> None:
    if not tracks_generation(info):
        new["metadata"].pop("generation", None)
        return
    ignored = {"metadata", "status"} if info.has_status or not info.is_custom else {"metadata"}
    changed = any(
        new.get(k) != old.get(k) for k in set(new) | set(old) if k not in ignored | {"apiVersion", "kind"}
    )
    generation = int((old.get("metadata") or {}).get("generation") or 1)
    new["metadata"]["generation"] = generation + 1 if changed else generation


def validate(info: ResourceInfo, obj: JsonObj, old: JsonObj | None) -> list[errors.Cause]:
    meta = obj.get("metadata") or {}
    causes: list[errors.Cause] = []
    if old is None:
        causes += validation.validate_object_name(
            info.storage_key.resource, str(meta.get("name") or ""), str(meta.get("generateName") or "")
        )
    causes += validation.validate_metadata_keys(meta)
    key = info.storage_key
    if info.is_custom:
        causes += validation.validate_custom(info, obj, old)
    elif key == registry.PODS:
        causes += validation.validate_pod(obj) if old is None else validation.validate_pod_update(obj, old)
    elif key == registry.SERVICES:
        causes += validation.validate_service(obj)
    elif key in (registry.MUTATING_WEBHOOKS, registry.VALIDATING_WEBHOOKS):
        causes += _validate_webhooks(obj)
    elif key == registry.CRDS:
        causes += _validate_crd(obj)
    return causes


def _validate_webhooks(configuration: JsonObj) -> list[errors.Cause]:
    causes = []
    for index, webhook in enumerate(configuration.get("webhooks") or []):
        path = f"webhooks[{index}]"
        if webhook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            causes.append(
                errors.Cause(
                    "FieldValueRequired" if not webhook.get("sideEffects") else "FieldValueNotSupported",
                    "Required value: must specify one of None, NoneOnDryRun"
                    if not webhook.get("sideEffects")
                    else f'Unsupported value: "{webhook.get("sideEffects")}": supported values: '
                    '"None", "NoneOnDryRun"',
                    f"{path}.sideEffects",
                )
            )
        if not webhook.get("admissionReviewVersions"):
            causes.append(
                errors.Cause(
                    "FieldValueRequired",
                    "Required value: must specify one of v1, v1beta1",
                    f"{path}.admissionReviewVersions",
                )
            )
        client_config = webhook.get("clientConfig") or {}
        if not client_config.get("url") and not client_config.get("service"):
            causes.append(
                errors.Cause(
                    "FieldValueRequired",
                    "Required value: exactly one of url or service is required",
                    f"{path}.clientConfig",
                )
            )
    return causes


def _validate_crd(crd: JsonObj) -> list[errors.Cause]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    expected = f"{names.get('plural', '')}.{spec.get('group', '')}"
    name = (crd.get("metadata") or {}).get("name", "")
    if name != expected:
        return [
            errors.Cause(
                "FieldValueInvalid",
                f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
                "metadata.name",
            )
        ]
    return []


def comparable(obj: JsonObj) -> JsonObj:
    """The object without fields every write changes, to spot no-op updates."""
    comparable = copy.copy(obj)
    meta = dict(comparable.get("metadata") or {})
    meta.pop("resourceVersion", None)
    meta.pop("managedFields", None)
    comparable["metadata"] = meta
    return comparable
