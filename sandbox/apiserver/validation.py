"""CRD structural-schema pruning, defaulting and validation; the built-in checks tfgang relies on.

Messages follow kube-apiserver's field-error wording (``<path>: Invalid value: ...``,
``Required value``, ``Unsupported value``) so that tests written here hold on a real cluster.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from typing import Any

from kubeobjects import names
from sandbox.apiserver import errors
from sandbox.apiserver.jsonobj import JsonObj

logger = logging.getLogger(__name__)


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


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _invalid(path: str, value: Any, detail: str) -> errors.Cause:
    return errors.Cause("FieldValueInvalid", f"Invalid value: {go_value(value)}: {detail}", path)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# --- pruning and defaulting ----------------------------------------------------------------------
def prune_and_default(schema: JsonObj | None, obj: JsonObj) -> list[str]:
    """Drop fields the schema does not declare, apply schema defaults; return the dropped paths."""
    if not schema:
        return []
    unknown: list[str] = []
    properties = schema.get("properties") or {}
    for name, value in list(obj.items()):
        if name in ("apiVersion", "kind", "metadata"):
            continue
        if name in properties:
            obj[name] = _prune_value(properties[name], value, name, unknown)
        elif not schema.get("x-kubernetes-preserve-unknown-fields"):
            del obj[name]
            unknown.append(name)
    _apply_defaults(schema, obj, unknown)
    return unknown


def _prune_value(schema: JsonObj, value: Any, path: str, unknown: list[str]) -> Any:
    if isinstance(value, dict):
        if schema.get("x-kubernetes-embedded-resource"):
            return value
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        for name, child in list(value.items()):
            child_path = _join(path, name)
            if properties and name in properties:
                value[name] = _prune_value(properties[name], child, child_path, unknown)
            elif isinstance(additional, dict):
                value[name] = _prune_value(additional, child, child_path, unknown)
            elif additional is True or schema.get("x-kubernetes-preserve-unknown-fields"):
                continue
            elif properties is not None or schema.get("type") == "object":
                del value[name]
                unknown.append(child_path)
        _apply_defaults(schema, value, unknown)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            value[index] = _prune_value(schema["items"], item, f"{path}[{index}]", unknown)
    return value


def _apply_defaults(schema: JsonObj, obj: JsonObj, unknown: list[str]) -> None:
    for name, child_schema in (schema.get("properties") or {}).items():
        if name not in obj and "default" in child_schema:
            default = copy.deepcopy(child_schema["default"])
            obj[name] = (
                _prune_value(child_schema, default, name, []) if isinstance(default, dict | list) else default
            )


# --- validation ----------------------------------------------------------------------------------
def validate_schema(schema: JsonObj | None, obj: JsonObj, old: JsonObj | None) -> list[errors.Cause]:
    if not schema:
        return []
    causes: list[errors.Cause] = []
    for name, child_schema in (schema.get("properties") or {}).items():
        if name in ("metadata", "apiVersion", "kind"):
            continue
        if name in obj:
            _validate(
                child_schema,
                obj[name],
                name,
                (old or {}).get(name) if old else None,
                old is not None and name in (old or {}),
                causes,
            )
    for name in schema.get("required") or []:
        if name not in obj:
            causes.append(errors.Cause("FieldValueRequired", "Required value", name))
    _run_rules(schema, obj, "", old, old is not None, causes)
    return causes


def _validate(
    schema: JsonObj, value: Any, path: str, old: Any, has_old: bool, causes: list[errors.Cause]
) -> None:
    expected = schema.get("type")
    if value is None:
        if not schema.get("nullable") and expected:
            causes.append(_invalid(path, "null", f'{path} in body must be of type {expected}: "null"'))
        return
    actual = json_type(value)
    if schema.get("x-kubernetes-int-or-string"):
        if actual not in ("integer", "string"):
            causes.append(
                _invalid(path, actual, f'{path} in body must be of type integer,string: "{actual}"')
            )
            return
    elif expected and expected != actual and not (expected == "number" and actual == "integer"):
        causes.append(_invalid(path, actual, f'{path} in body must be of type {expected}: "{actual}"'))
        return
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(go_value(v) for v in schema["enum"])
        causes.append(
            errors.Cause(
                "FieldValueNotSupported",
                f"Unsupported value: {go_value(value)}: supported values: {supported}",
                path,
            )
        )
    if isinstance(value, int | float) and not isinstance(value, bool):
        _validate_number(schema, value, path, causes)
    if isinstance(value, str):
        _validate_string(schema, value, path, causes)
    if isinstance(value, list):
        _validate_array(schema, value, path, old if has_old else None, has_old, causes)
    if isinstance(value, dict):
        _validate_object(schema, value, path, old if isinstance(old, dict) else None, has_old, causes)
    _run_rules(schema, value, path, old, has_old, causes)


def _validate_number(schema: JsonObj, value: float, path: str, causes: list[errors.Cause]) -> None:
    if "minimum" in schema:
        minimum = schema["minimum"]
        if value < minimum or (schema.get("exclusiveMinimum") and value == minimum):
            word = "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
            causes.append(_invalid(path, value, f"{path} in body should be {word} {minimum}"))
    if "maximum" in schema:
        maximum = schema["maximum"]
        if value > maximum or (schema.get("exclusiveMaximum") and value == maximum):
            word = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
            causes.append(_invalid(path, value, f"{path} in body should be {word} {maximum}"))


def _validate_string(schema: JsonObj, value: str, path: str, causes: list[errors.Cause]) -> None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        causes.append(
            errors.Cause(
                "FieldValueTooLong", f"Too long: may not be more than {schema['maxLength']} bytes", path
            )
        )
    if "minLength" in schema and len(value) < schema["minLength"]:
        causes.append(
            _invalid(path, value, f"{path} in body should be at least {schema['minLength']} chars long")
        )
    pattern = schema.get("pattern")
    if pattern and not re.search(pattern, value):
        causes.append(_invalid(path, value, f"{path} in body should match '{pattern}'"))


def _validate_array(
    schema: JsonObj, value: list[Any], path: str, old: Any, has_old: bool, causes: list[errors.Cause]
) -> None:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        causes.append(
            errors.Cause(
                "FieldValueTooMany",
                f"Too many: {len(value)}: must have at most {schema['maxItems']} items",
                path,
            )
        )
    if "minItems" in schema and len(value) < schema["minItems"]:
        causes.append(
            _invalid(path, value, f"{path} in body should have at least {schema['minItems']} items")
        )
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            _validate(items, item, f"{path}[{index}]", None, False, causes)


def _validate_object(
    schema: JsonObj, value: JsonObj, path: str, old: JsonObj | None, has_old: bool, causes: list[errors.Cause]
) -> None:
    if schema.get("x-kubernetes-embedded-resource"):
        return
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for name, child in value.items():
        child_path = _join(path, name)
        child_has_old = old is not None and name in old
        child_old = old.get(name) if old is not None else None
        if name in properties:
            _validate(properties[name], child, child_path, child_old, child_has_old, causes)
        elif isinstance(additional, dict):
            _validate(additional, child, child_path, child_old, child_has_old, causes)
    for name in schema.get("required") or []:
        if name not in value:
            causes.append(errors.Cause("FieldValueRequired", "Required value", _join(path, name)))
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        causes.append(
            errors.Cause(
                "FieldValueTooMany",
                f"Too many: {len(value)}: must have at most {schema['maxProperties']} items",
                path,
            )
        )
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        causes.append(
            _invalid(
                path,
                json_type(value),
                f"{path} in body should have at least {schema['minProperties']} properties",
            )
        )


_TRANSITION_RULES = {"self == oldSelf", "oldSelf == self"}


def _run_rules(
    schema: JsonObj, value: Any, path: str, old: Any, has_old: bool, causes: list[errors.Cause]
) -> None:
    """The CEL rules the sandbox understands: immutability (``self == oldSelf``) transition rules."""
    for rule in schema.get("x-kubernetes-validations") or []:
        expression = " ".join(str(rule.get("rule", "")).split())
        if expression in _TRANSITION_RULES:
            if has_old and value != old:
                message = rule.get("message") or f"failed rule: {rule.get('rule')}"
                field_path = (
                    _join(path, str(rule["fieldPath"]).lstrip(".")) if rule.get("fieldPath") else path
                )
                causes.append(_invalid(field_path, json_type(value), message))
        else:
            logger.debug("CEL rule %r is not evaluated by the sandbox", expression)


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
