"""Validation on writes: custom resources against their CRD's structural schema (``kube.schema``, the
same check ``kubectl tfjob explain`` runs), and the built-in kinds' checks tfgang relies on.

Messages follow kube-apiserver's field-error wording (``<path>: Invalid value: ...``,
``Required value``, ``Unsupported value``) so that tests written here hold on a real cluster.
"""

from __future__ import annotations

import json
from typing import Any

from kubeobjects import names
from sandbox.apiserver import errors
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.registry import ResourceInfo


def go_value(value: Any) -> str:
    """A value the way Go's ``%#v``-ish field errors print it: strings quoted, numbers bare."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def _invalid(path: str, value: Any, detail: str) -> errors.Cause:
    return errors.Cause("FieldValueInvalid", f"Invalid value: {go_value(value)}: {detail}", path)


# --- custom resources: their CRD's structural schema (kube.schema) --------------------------------
def decode_custom(info: ResourceInfo, obj: JsonObj) -> list[str]:
    """Prune, drop non-nullable nulls and default a custom resource; return the pruned fields' paths."""
    structural = info.custom.structural if info.custom else None
    return structural.decode(obj) if structural else []


def validate_custom(info: ResourceInfo, obj: JsonObj, old: JsonObj | None) -> list[errors.Cause]:
    """The schema's verdict on a decoded custom resource (and its ``self == oldSelf`` rules on updates)."""
    structural = info.custom.structural if info.custom else None
    if structural is None:
        return []
    return [errors.Cause(e.kind.reason, e.body, e.path) for e in structural.validate(obj, old)]


# --- built-in checks -----------------------------------------------------------------------------
def validate_object_name(resource: str, name: str, generate_name: str) -> list[errors.Cause]:
    if not name:
        if generate_name:
            return []
        return [
            errors.Cause(
                "FieldValueRequired", "Required value: name or generateName is required", "metadata.name"
            )
        ]
    if resource == "namespaces":
        problems = names.dns1123_label_errors(name)
    elif resource == "services":
        problems = names.dns1035_label_errors(name)
    elif resource in ("clusterroles", "clusterrolebindings", "roles", "rolebindings", "events"):
        problems = []  # path segment names: anything without '/' or '%' (not checked here)
    else:
        problems = names.dns1123_subdomain_errors(name)
    return [_invalid("metadata.name", name, problem) for problem in problems]


def validate_pod(pod: JsonObj) -> list[errors.Cause]:
    spec = pod.get("spec") or {}
    causes: list[errors.Cause] = []
    containers = spec.get("containers") or []
    if not containers:
        causes.append(errors.Cause("FieldValueRequired", "Required value", "spec.containers"))
    seen: set[str] = set()
    for kind in ("containers", "initContainers"):
        for index, container in enumerate(spec.get(kind) or []):
            path = f"spec.{kind}[{index}]"
            name = str(container.get("name", ""))
            if not name:
                causes.append(errors.Cause("FieldValueRequired", "Required value", f"{path}.name"))
            elif problems := names.dns1123_label_errors(name):
                causes.extend(_invalid(f"{path}.name", name, problem) for problem in problems)
            elif name in seen:
                causes.append(
                    errors.Cause("FieldValueDuplicate", f"Duplicate value: {go_value(name)}", f"{path}.name")
                )
            seen.add(name)
            if not container.get("image"):
                causes.append(errors.Cause("FieldValueRequired", "Required value", f"{path}.image"))
    policy = spec.get("restartPolicy")
    if policy not in (None, "Always", "OnFailure", "Never"):
        causes.append(
            errors.Cause(
                "FieldValueNotSupported",
                f'Unsupported value: {go_value(policy)}: supported values: "Always", "OnFailure", "Never"',
                "spec.restartPolicy",
            )
        )
    return causes


_MUTABLE_POD_SPEC_FIELDS = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")

POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _comparable_pod_spec(spec: JsonObj) -> JsonObj:
    result = {key: value for key, value in spec.items() if key not in _MUTABLE_POD_SPEC_FIELDS}
    for kind in ("containers", "initContainers"):
        if kind in result:
            result[kind] = [{k: v for k, v in c.items() if k != "image"} for c in result[kind]]
    return result


def validate_pod_update(new: JsonObj, old: JsonObj) -> list[errors.Cause]:
    causes = validate_pod(new)
    if _comparable_pod_spec(new.get("spec") or {}) != _comparable_pod_spec(old.get("spec") or {}):
        causes.append(errors.Cause("FieldValueForbidden", f"Forbidden: {POD_UPDATE_FORBIDDEN}", "spec"))
    return causes


def validate_service(service: JsonObj) -> list[errors.Cause]:
    spec = service.get("spec") or {}
    causes: list[errors.Cause] = []
    if not spec.get("ports") and spec.get("clusterIP") != "None" and spec.get("type") != "ExternalName":
        causes.append(errors.Cause("FieldValueRequired", "Required value", "spec.ports"))
    return causes


def validate_metadata_keys(meta: JsonObj) -> list[errors.Cause]:
    """Label keys and values, and annotation keys, as ObjectMeta validation checks them."""
    causes = []
    for key, value in (meta.get("labels") or {}).items():
        for problem in names.qualified_name_errors(str(key)):
            causes.append(_invalid("metadata.labels", key, problem))
        text = str(value)
        for problem in names.label_value_errors(text):
            causes.append(_invalid("metadata.labels", text, problem))
    for key in meta.get("annotations") or {}:
        for problem in names.qualified_name_errors(str(key).lower()):
            causes.append(_invalid("metadata.annotations", key, problem))
    return causes
