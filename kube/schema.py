"""Custom resources checked against their CRD's structural schema, the way kube-apiserver does it.

On every write of a custom resource kube-apiserver decodes the JSON, **prunes** the fields its
schema does not declare (unless ``x-kubernetes-preserve-unknown-fields``; an
``x-kubernetes-embedded-resource`` keeps ``apiVersion``, ``kind`` and ``metadata``), **drops the
nulls** of non-nullable fields that have no default, applies the schema's **defaults**, and only
then **validates** the object against the schema (kube-openapi's OpenAPI v3 validator). Here the
first three steps walk the schema; validation is jsonschema's, on the ``openAPIV3Schema`` translated
to what jsonschema understands: ``nullable`` becomes a ``null`` type, ``x-kubernetes-int-or-string``
an ``integer``/``string`` type, and the string formats kube-apiserver checks get a format checker
(OpenAPI 3.0's schema object is Draft 4's, with boolean ``exclusiveMinimum``). Errors are
apimachinery's field errors, worded as kube-apiserver words them (``spec.x: Invalid value:
"string": spec.x in body must be of type integer: "string"``, ``Required value``, ``Unsupported
value``).

Of the CEL rules (``x-kubernetes-validations``, which kube-apiserver v1.20 ignores) only the
immutability rule ``self == oldSelf`` is evaluated, on updates.

Generic machinery: it knows CRDs, not TFJobs. Nothing on the webhook's request path uses it.
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import jsonschema
from jsonschema import Draft4Validator, Draft6Validator, FormatChecker, ValidationError

from kubeobjects.fielderrors import ErrorType, FieldError, unsupported

JsonSchema = Mapping[str, Any]

# Kept at the root of every resource (and of every embedded one): the object's identity.
_RESOURCE_IDENTITY: Final = ("apiVersion", "kind", "metadata")

# kube-openapi treats a float with no fraction (``1.0``) as an integer, as Draft 6 does.
_KubeValidator: Any = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    Draft4Validator, type_checker=Draft6Validator.TYPE_CHECKER
)

_TRANSITION_RULES: Final = frozenset({"self == oldSelf", "oldSelf == self"})


def _date_time(value: object) -> bool:
    # strfmt.DateTime accepts RFC 3339 timestamps ("2006-01-02T15:04:05Z", with fractions or an offset).
    if not isinstance(value, str):
        return True
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return "T" in value.upper()


def _byte(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _format_checker() -> FormatChecker:
    """The string formats kube-apiserver checks; numeric formats (``int32``) it does not, nor here."""
    checker = FormatChecker(formats=())
    checker.checks("date-time")(_date_time)
    checker.checks("byte")(_byte)
    checker.checks("uuid")(
        lambda value: (
            not isinstance(value, str)
            or re.fullmatch(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", value)
            is not None
        )
    )
    return checker


_FORMATS: Final = _format_checker()


# --- the schema, translated for jsonschema --------------------------------------------------------
def to_json_schema(node: Any) -> Any:
    """An ``openAPIV3Schema`` node as a Draft 4 JSON Schema: ``nullable`` and int-or-string made types."""
    if isinstance(node, list):
        return [to_json_schema(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    translated: dict[str, Any] = {}
    for key, value in node.items():
        if key.startswith("x-kubernetes-") or key in ("nullable", "default", "description", "example"):
            continue
        if key in ("properties", "definitions", "patternProperties"):
            translated[key] = {name: to_json_schema(child) for name, child in value.items()}
        else:
            translated[key] = to_json_schema(value)
    if node.get("x-kubernetes-int-or-string"):
        # The ``anyOf: [integer, string]`` a structural schema may carry says the same as the type.
        if _is_int_or_string_any_of(translated.get("anyOf")):
            del translated["anyOf"]
        translated["type"] = ["integer", "string"]
    if node.get("nullable") and "type" in translated:
        kinds = translated["type"]
        translated["type"] = [*(kinds if isinstance(kinds, list) else [kinds]), "null"]
    return translated


def _is_int_or_string_any_of(any_of: object) -> bool:
    return isinstance(any_of, list) and sorted(map(str, any_of)) == sorted(
        map(str, [{"type": "integer"}, {"type": "string"}])
    )


@dataclass(frozen=True)
class StructuralSchema:
    """One CRD version's ``openAPIV3Schema``, compiled once, applied as kube-apiserver applies it."""

    openapi: JsonSchema
    # With the status subresource, a create ignores the status it is sent (PrepareForCreate).
    status_subresource: bool = False
    _validator: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        translated = to_json_schema(self.openapi)
        _KubeValidator.check_schema(translated)
        object.__setattr__(self, "_validator", _KubeValidator(translated, format_checker=_FORMATS))

    @classmethod
    def of_crd(cls, crd: Mapping[str, Any], version: str | None = None) -> StructuralSchema:
        """The schema of ``version`` of a CustomResourceDefinition (default: its storage version)."""
        versions = list((crd.get("spec") or {}).get("versions") or [])
        chosen = next(
            (v for v in versions if (v.get("name") == version if version else v.get("storage"))), None
        )
        if chosen is None:
            raise ValueError(f"the CRD has no version {version or '(storage)'}")
        schema = (chosen.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, Mapping):
            raise ValueError(f"version {chosen.get('name')} of the CRD has no openAPIV3Schema")
        return cls(schema, status_subresource="status" in (chosen.get("subresources") or {}))

    # --- decoding: what kube-apiserver does before validation ---------------------------------------
    def decode(self, obj: dict[str, Any]) -> list[str]:
        """Prune, drop non-nullable nulls, apply defaults, in place; return the pruned fields' paths."""
        pruned = self.prune(obj)
        drop_nulls(self.openapi, obj)
        apply_defaults(self.openapi, obj)
        return pruned

    def prune(self, obj: dict[str, Any]) -> list[str]:
        """Drop, in place, the fields the schema does not declare; return their paths."""
        pruned: list[str] = []
        _prune(self.openapi, obj, "", pruned, root=True)
        return pruned

    # --- validation ---------------------------------------------------------------------------------
    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
        """Every schema violation of a decoded object, and on updates the ``self == oldSelf`` rules."""
        body = {key: value for key, value in obj.items() if key not in _RESOURCE_IDENTITY}
        errors: list[FieldError] = []
        missing_reported: set[tuple[str, str]] = set()
        for error in self._validator.iter_errors(body):
            errors += _field_errors(error, missing_reported)
        if old is not None:
            _transition_errors(self.openapi, body, old, "", errors)
        return errors

    def admit(self, obj: Mapping[str, Any]) -> Admitted:
        """A create as kube-apiserver sees it: a decoded copy of ``obj`` and its schema errors."""
        decoded = copy.deepcopy(dict(obj))
        if self.status_subresource:
            decoded.pop("status", None)
        pruned = self.decode(decoded)
        return Admitted(decoded, tuple(pruned), tuple(self.validate(decoded)))


@dataclass(frozen=True)
class Admitted:
    """What a create would store (``object``), the fields pruned from it, and why it is refused."""

    object: dict[str, Any]
    pruned: tuple[str, ...]
    errors: tuple[FieldError, ...]


# --- pruning, nulls and defaults -------------------------------------------------------------------
def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _prune(schema: JsonSchema | None, value: Any, path: str, pruned: list[str], root: bool = False) -> None:
    if isinstance(value, dict):
        if schema is None:
            return  # under x-kubernetes-preserve-unknown-fields: kept as it is
        keep_identity = root or bool(schema.get("x-kubernetes-embedded-resource"))
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or additional is True
        for name in list(value):
            child_path = _join(path, name)
            if keep_identity and name in _RESOURCE_IDENTITY and name not in properties:
                continue
            if keep_identity and name == "metadata":
                continue  # ObjectMeta is coerced by the API server, not by the schema
            if name in properties:
                _prune(properties[name], value[name], child_path, pruned)
            elif isinstance(additional, Mapping):
                _prune(additional, value[name], child_path, pruned)
            elif preserve:
                _prune(None, value[name], child_path, pruned)
            else:
                del value[name]
                pruned.append(child_path)
    elif isinstance(value, list) and schema is not None and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            _prune(schema["items"], item, f"{path}[{index}]", pruned)


def _child_schemas(schema: JsonSchema, value: dict[str, Any]) -> Iterator[tuple[str, JsonSchema]]:
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for name in list(value):
        if name in properties:
            yield name, properties[name]
        elif isinstance(additional, Mapping):
            yield name, additional


def drop_nulls(schema: JsonSchema, value: Any) -> None:
    """Remove, in place, the ``null`` values of non-nullable fields without a default."""
    if isinstance(value, dict):
        for name, child in _child_schemas(schema, value):
            if value[name] is None and not child.get("nullable") and "default" not in child:
                del value[name]
            else:
                drop_nulls(child, value[name])
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for item in value:
            drop_nulls(schema["items"], item)


def apply_defaults(schema: JsonSchema, value: Any) -> None:
    """Fill in, in place, absent fields (and non-nullable nulls) that have a schema default."""
    if isinstance(value, dict):
        for name, child in (schema.get("properties") or {}).items():
            if "default" in child and (
                name not in value or (value[name] is None and not child.get("nullable"))
            ):
                value[name] = copy.deepcopy(child["default"])
        for name, child in _child_schemas(schema, value):
            apply_defaults(child, value[name])
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for item in value:
            apply_defaults(schema["items"], item)


# --- jsonschema's errors as kube-apiserver's field errors ------------------------------------------
def _path(parts: Iterable[str | int]) -> str:
    # kube-openapi (v1.20) names a nested field by its keys joined with dots; list items are named
    # by their list's path, with no index.
    return ".".join(part for part in parts if isinstance(part, str))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _field_errors(error: ValidationError, missing_reported: set[tuple[str, str]]) -> list[FieldError]:
    path = _path(error.absolute_path)
    keyword = str(error.validator)
    rule: Any = error.validator_value
    value: Any = error.instance
    node: Any = error.schema
    where = f"{path} in body"
    if keyword == "type":
        actual = _json_type(value)
        expected = ",".join(rule) if isinstance(rule, list) else str(rule)
        expected = expected.removesuffix(",null")
        return [
            FieldError(path, ErrorType.INVALID, f'{where} must be of type {expected}: "{actual}"', actual)
        ]
    if keyword == "required":
        errors = []
        for name in rule:
            if isinstance(value, dict) and name not in value and (path, name) not in missing_reported:
                missing_reported.add((path, name))
                errors.append(FieldError(_join(path, name), ErrorType.REQUIRED, ""))
        return errors
    if keyword == "enum":
        return [unsupported(path, value, rule)]
    if keyword in ("minimum", "maximum"):
        exclusive = bool(node.get(f"exclusive{keyword[:1].upper()}{keyword[1:]}"))
        word = "greater than" if keyword == "minimum" else "less than"
        return [
            FieldError(
                path,
                ErrorType.INVALID,
                f"{where} should be {word}{'' if exclusive else ' or equal to'} {rule}",
                value,
            )
        ]
    # kube-openapi's bad value: the string for lengths, the count for items, the limit for properties.
    if keyword == "maxLength":
        return [FieldError(path, ErrorType.INVALID, f"{where} should be at most {rule} chars long", value)]
    if keyword == "minLength":
        return [FieldError(path, ErrorType.INVALID, f"{where} should be at least {rule} chars long", value)]
    if keyword == "pattern":
        return [FieldError(path, ErrorType.INVALID, f"{where} should match '{rule}'", value)]
    if keyword == "format":
        return [FieldError(path, ErrorType.INVALID, f'{where} must be of type {rule}: "{value}"', value)]
    if keyword == "maxItems":
        return [FieldError(path, ErrorType.INVALID, f"{where} should have at most {rule} items", len(value))]
    if keyword == "minItems":
        return [FieldError(path, ErrorType.INVALID, f"{where} should have at least {rule} items", len(value))]
    if keyword == "maxProperties":
        return [FieldError(path, ErrorType.INVALID, f"{where} should have at most {rule} properties", rule)]
    if keyword == "minProperties":
        return [FieldError(path, ErrorType.INVALID, f"{where} should have at least {rule} properties", rule)]
    if keyword == "uniqueItems":
        return [FieldError(path, ErrorType.DUPLICATE, "", value)]
    if keyword == "multipleOf":
        return [FieldError(path, ErrorType.INVALID, f"{where} should be a multiple of {rule}", value)]
    # anyOf, oneOf, allOf, not: kube-openapi says the value fails the combination.
    return [FieldError(path, ErrorType.INVALID, f"{where} {error.message}", _json_type(value))]


def _transition_errors(schema: JsonSchema, value: Any, old: Any, path: str, errors: list[FieldError]) -> None:
    """``self == oldSelf`` rules, on fields present both before and after the update."""
    for rule in schema.get("x-kubernetes-validations") or []:
        expression = " ".join(str(rule.get("rule", "")).split())
        if expression in _TRANSITION_RULES and value != old:
            message = rule.get("message") or f"failed rule: {rule.get('rule')}"
            errors.append(FieldError(path, ErrorType.INVALID, str(message), _json_type(value)))
    if isinstance(value, dict) and isinstance(old, dict):
        for name, child in _child_schemas(schema, value):
            if name in old:
                _transition_errors(child, value[name], old[name], _join(path, name), errors)
