"""Per-kind preparation of objects on create and update (defaults, allocation, status rules)."""

from __future__ import annotations

import copy
import json
import secrets
from typing import Any

from sandbox.apiserver import conversion, defaults, errors, validation
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.registry import ResourceInfo, StorageKey
from sandbox.apiserver.state import ApiState, timestamp

PRIORITY_CLASSES = StorageKey("scheduling.k8s.io", "priorityclasses")
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
        found = state.storage.get(PRIORITY_CLASSES, "", str(class_name))
        if found is None:
            name = (pod.get("metadata") or {}).get("name") or (pod.get("metadata") or {}).get(
                "generateName", ""
            )
            raise errors.forbidden(
                "pods", "", str(name), f"no PriorityClass with name {class_name} was found"
            )
        return int(found.get("value", 0)), str(found.get("preemptionPolicy", "PreemptLowerPriority"))
    for priority_class in state.storage.list_in(PRIORITY_CLASSES, None):
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
    key = (info.storage_key.group, info.storage_key.resource)
    if info.is_custom:
        if info.has_status:
            obj.pop("status", None)
        return validation.prune_and_default(info.custom.schema if info.custom else None, obj)
    if key == ("", "pods"):
        priority, preemption = _pod_priority(state, obj)
        defaults.default_pod(obj, priority, preemption)
    elif key == ("", "services"):
        defaults.default_service(obj)
        _allocate_cluster_ip(state, obj)
    elif key == ("", "namespaces"):
        defaults.default_namespace(obj)
    elif key == ("apiextensions.k8s.io", "customresourcedefinitions"):
        defaults.default_crd(obj)
        obj["status"] = _crd_status(obj, timestamp(state.now()))
    elif key == ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"):
        defaults.default_webhook_configuration(obj, mutating=True)
    elif key == ("admissionregistration.k8s.io", "validatingwebhookconfigurations"):
        defaults.default_webhook_configuration(obj, mutating=False)
    elif key == ("scheduling.k8s.io", "priorityclasses"):
        defaults.default_priority_class(obj)
    elif key == ("apps", "deployments"):
        defaults.default_deployment(obj)
    elif key == ("", "events"):
        obj.setdefault("involvedObject", {})
    elif key == ("", "secrets") and not obj.get("type"):
        obj["type"] = "Opaque"
    return []


def default_after_admission(state: ApiState, info: ResourceInfo, obj: JsonObj) -> None:
    """Defaults again on a webhook-patched object: kube-apiserver decodes (and so defaults) it anew."""
    key = (info.storage_key.group, info.storage_key.resource)
    if info.is_custom:
        prepare_create(state, info, obj)
    elif key == ("", "pods"):
        defaults.default_pod_spec(obj.setdefault("spec", {}))
    elif key == ("", "services"):
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
    key = (info.storage_key.group, info.storage_key.resource)
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
        unknown = validation.prune_and_default(info.custom.schema if info.custom else None, new)
    elif key == ("", "pods"):
        defaults.default_pod_spec(new.setdefault("spec", {}))
        _sync_ips(new.setdefault("status", {}))
    elif key == ("", "services"):
        defaults.default_service(new)
        old_spec = old.get("spec") or {}
        spec = new["spec"]
        for field_name in ("clusterIP", "clusterIPs"):
            if not spec.get(field_name) and old_spec.get(field_name):
                spec[field_name] = old_spec[field_name]
    elif key == ("apiextensions.k8s.io", "customresourcedefinitions") and subresource != "status":
        defaults.default_crd(new)
        new["status"] = _crd_status(new, timestamp(state.now()))
    elif key == ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"):
        defaults.default_webhook_configuration(new, mutating=True)
    elif key == ("admissionregistration.k8s.io", "validatingwebhookconfigurations"):
        defaults.default_webhook_configuration(new, mutating=False)
    elif key == ("", "namespaces"):
        new["status"] = clone(old.get("status") or {}) if subresource != "status" else new.get("status", {})
    _bump_generation(info, new, old)
    return unknown


# Built-in kinds whose strategies keep metadata.generation (custom resources always do).
GENERATION_KINDS = frozenset(
    {
        StorageKey("", "pods"),
        StorageKey("apps", "deployments"),
        StorageKey("apiextensions.k8s.io", "customresourcedefinitions"),
        StorageKey("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        StorageKey("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
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
    key = (info.storage_key.group, info.storage_key.resource)
    if info.is_custom:
        causes += validation.validate_schema(info.custom.schema if info.custom else None, obj, old)
    elif key == ("", "pods"):
        causes += validation.validate_pod(obj) if old is None else validation.validate_pod_update(obj, old)
    elif key == ("", "services"):
        causes += validation.validate_service(obj)
    elif key in (
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    ):
        causes += _validate_webhooks(obj)
    elif key == ("apiextensions.k8s.io", "customresourcedefinitions"):
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
