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

The answers are the current release's (v1.37), or v1.20's (``Release``): paths, reasons, some
messages, the numeric formats and the CEL rules left unchecked differ (docs/architecture.md, "The
CRD schema, one rule book").

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

from kubeobjects.fielderrors import GO_NIL, ErrorType, FieldError, unsupported

JsonSchema = Mapping[str, Any]

# Kept at the root of every resource (and of every embedded one): the object's identity.
_RESOURCE_IDENTITY: Final = ("apiVersion", "kind", "metadata")

# kube-openapi treats a float with no fraction (``1.0``) as an integer, as Draft 6 does.
_KubeValidator: Any = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    Draft4Validator, type_checker=Draft6Validator.TYPE_CHECKER
)

_TRANSITION_RULES: Final = frozenset({"self == oldSelf", "oldSelf == self"})
# Where apiextensions-apiserver reports an error that names no field (Go's nil *field.Path).
NIL_PATH: Final = "<nil>"


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


# kube-openapi's numeric range check: the value as an integer of the format, or a float32.
_INTEGER_RANGES: Final = {"int32": 2**31, "int64": 2**63, "": 2**63}
_FLOAT32_MAX: Final = 3.4028234663852886e38
# The mark of an int-or-string whose ``anyOf: [integer, string]`` the translation dropped.
_INT_OR_STRING_ANY_OF: Final = "x-int-or-string-any-of"
# The name a translated schema gives an integer with no format, so that its int64 check can say so.
_DEFAULT_INTEGER_FORMAT: Final = "x-default-int64"


def _in_integer_range(format_name: str) -> Any:
    def check(value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return True
        if isinstance(value, float) and not value.is_integer():
            return False  # "1.5" is not an integer to strconv.ParseInt
        limit = _INTEGER_RANGES[format_name]
        return -limit <= int(value) < limit

    return check


def _format_checker() -> FormatChecker:
    """The formats kube-apiserver checks: strings' (here the common ones), and current releases' numbers."""
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
    checker.checks("int32")(_in_integer_range("int32"))
    checker.checks("int64")(_in_integer_range("int64"))
    checker.checks(_DEFAULT_INTEGER_FORMAT)(_in_integer_range(""))
    checker.checks("float")(
        lambda value: (
            isinstance(value, bool) or not isinstance(value, int | float) or abs(value) <= _FLOAT32_MAX
        )
    )
    return checker


# The string formats apiextensions-apiserver keeps (the others it strips, unchecked); here only
# date-time, byte and uuid are checked, the others kept to name a wrong type as kube-openapi does.
_STRING_FORMATS: Final = frozenset(
    {
        "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3",
        "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor",
        "byte", "password", "date", "duration", "datetime",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Release:
    """Which kube-apiserver's answers to give. CRD validation answers differently in v1.20, the
    oldest release tfgang supports, and in v1.37, the current one; each flag is one difference
    (which release in between made the change is not tracked here)."""

    name: str
    # ``spec.tags[1]`` (current) or ``spec.tags`` (v1.20): how a list item is named.
    indexes_list_items: bool
    # Current: a wrong type is ``FieldValueTypeInvalid``, maxLength ``Too long: may not be more
    # than 5 bytes``, maxItems/maxProperties ``Too many: 3: must have at most 2 items``, and
    # minProperties shows the count; v1.20: all ``FieldValueInvalid`` in kube-openapi's words,
    # the properties' limit shown as the value.
    typed_reasons: bool
    # Current: ``int32``/``int64`` on integers and ``float``/``double`` on numbers are kept and
    # checked (a range, and a wrong type is named by the format); v1.20 strips them, unchecked.
    checks_numeric_formats: bool
    # Current: a schema with CEL rules answers an object with a "blocking" schema error (a wrong
    # type, Required, Unsupported, Too long, Too many) with one more cause, and evaluates no rule.
    reports_unchecked_rules: bool
    # The string formats kept (v1.34 added Kubernetes' short and long names), normalised without "-".
    string_formats: frozenset[str] = _STRING_FORMATS


V1_20: Final = Release("v1.20", False, False, False, False)
V1_37: Final = Release("v1.37", True, True, True, True, _STRING_FORMATS | {"k8sshortname", "k8slongname"})
CURRENT: Final = V1_37

UNCHECKED_RULES: Final = (
    "some validation rules were not checked because the object was invalid; correct the existing "
    "errors to complete validation"
)
_BLOCKING: Final = frozenset(
    {
        ErrorType.UNSUPPORTED,
        ErrorType.REQUIRED,
        ErrorType.TOO_LONG,
        ErrorType.TOO_MANY,
        ErrorType.TYPE_INVALID,
    }
)


_FORMATS: Final = _format_checker()


# --- the schema, translated for jsonschema --------------------------------------------------------
def to_json_schema(node: Any, release: Release = CURRENT) -> Any:
    """An ``openAPIV3Schema`` node as a Draft 4 JSON Schema: ``nullable`` and int-or-string made types,
    the formats ``release`` does not check dropped."""
    if isinstance(node, list):
        return [to_json_schema(item, release) for item in node]
    if not isinstance(node, Mapping):
        return node
    translated: dict[str, Any] = {}
    for key, value in node.items():
        if key.startswith("x-kubernetes-") or key in ("nullable", "default", "description", "example"):
            continue
        if key in ("properties", "definitions", "patternProperties"):
            translated[key] = {name: to_json_schema(child, release) for name, child in value.items()}
        else:
            translated[key] = to_json_schema(value, release)
    if node.get("x-kubernetes-int-or-string"):
        # The ``anyOf: [integer, string]`` a structural schema may carry says the same as the type.
        if _is_int_or_string_any_of(node.get("anyOf")):
            # kube-openapi still checks the anyOf, and says so when the type fails (_any_of_errors).
            del translated["anyOf"]
            translated[_INT_OR_STRING_ANY_OF] = True
        translated["type"] = ["integer", "string"]
    _keep_checked_format(node, translated, release)
    if node.get("nullable") and "type" in translated:
        kinds = translated["type"]
        translated["type"] = [*(kinds if isinstance(kinds, list) else [kinds]), "null"]
    return translated


def _keep_checked_format(node: Mapping[str, Any], translated: dict[str, Any], release: Release) -> None:
    """apiextensions-apiserver strips the formats it does not check; current releases check an
    integer's range even with no format (as an int64)."""
    format_name = str(node.get("format") or "")
    kind = "" if node.get("x-kubernetes-int-or-string") else str(node.get("type") or "")
    if release.checks_numeric_formats:
        kept = {
            "": format_name.replace("-", "") in release.string_formats,
            "string": format_name.replace("-", "") in release.string_formats,
            "integer": format_name in ("int32", "int64"),
            "number": format_name in ("float", "double"),
        }.get(kind, False)
    else:
        kept = format_name.replace("-", "") in release.string_formats
    translated.pop("format", None)
    if kept:
        translated["format"] = format_name
    elif release.checks_numeric_formats and kind == "integer":
        translated["format"] = _DEFAULT_INTEGER_FORMAT


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
    # Whose answers: the current release's unless a test compares with an older one.
    release: Release = CURRENT
    _validator: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        translated = to_json_schema(self.openapi, self.release)
        _KubeValidator.check_schema(translated)
        object.__setattr__(self, "_validator", _KubeValidator(translated, format_checker=_FORMATS))

    @classmethod
    def of_crd(
        cls, crd: Mapping[str, Any], version: str | None = None, release: Release = CURRENT
    ) -> StructuralSchema:
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
        return cls(schema, "status" in (chosen.get("subresources") or {}), release)

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
            errors += _field_errors(error, missing_reported, self.release)
        blocked = any(error.kind in _BLOCKING for error in errors)
        if blocked and self.release.reports_unchecked_rules and _has_rules(self.openapi):
            # apiextensions-apiserver evaluates no CEL rule of an object with a blocking error.
            return [*errors, FieldError(NIL_PATH, ErrorType.INVALID, UNCHECKED_RULES, GO_NIL)]
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
def _path(parts: Iterable[str | int], release: Release) -> str:
    # kube-openapi names a nested field by its keys joined with dots, a list item by its index
    # (``spec.tags[1]``); v1.20 named it by its list's path, with no index.
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]" if release.indexes_list_items else ""
        else:
            path = _join(path, part)
    return path


def _has_rules(schema: Any) -> bool:
    if isinstance(schema, list):
        return any(_has_rules(item) for item in schema)
    if not isinstance(schema, Mapping):
        return False
    return bool(schema.get("x-kubernetes-validations")) or any(
        _has_rules(value) for key, value in schema.items() if key not in ("default", "enum", "example")
    )


def _go_format(value: Any) -> str:
    """The format kube-openapi infers from a decoded JSON value that is not a string or a list."""
    if isinstance(value, int) and not isinstance(value, bool):
        return "int64"
    return "float64" if isinstance(value, float) else ""


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


def _field_errors(
    error: ValidationError, missing_reported: set[tuple[str, str]], release: Release
) -> list[FieldError]:
    path = _path(error.absolute_path, release)
    keyword = str(error.validator)
    rule: Any = error.validator_value
    value: Any = error.instance
    node: Any = error.schema
    where = f"{path} in body"
    wrong_type = ErrorType.TYPE_INVALID if release.typed_reasons else ErrorType.INVALID
    if keyword == "type":
        actual = _json_type(value)
        expected = ",".join(rule) if isinstance(rule, list) else str(rule)
        expected = expected.removesuffix(",null")
        schema_format = node.get("format")  # one the release keeps: the translation dropped the rest
        if value is not None and schema_format not in (None, _DEFAULT_INTEGER_FORMAT):
            # kube-openapi's type check of a formatted field: a string or a list passes it unless
            # the field is numeric; any other value is named by its Go format, the field by its own.
            if isinstance(value, str | list):
                if "integer" not in expected and "number" not in expected:
                    return []
            else:
                actual = _go_format(value)
                expected = schema_format
        type_error = FieldError(path, wrong_type, f'{where} must be of type {expected}: "{actual}"', actual)
        if node.get(_INT_OR_STRING_ANY_OF):
            return [type_error, *_any_of_errors(path, value, release)]
        return [type_error]
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
        if release.typed_reasons:
            return [
                FieldError(path, ErrorType.TOO_LONG, f"may not be more than {rule} {_plural(rule, 'byte')}")
            ]
        return [FieldError(path, ErrorType.INVALID, f"{where} should be at most {rule} chars long", value)]
    if keyword == "minLength":
        return [FieldError(path, ErrorType.INVALID, f"{where} should be at least {rule} chars long", value)]
    if keyword == "pattern":
        return [FieldError(path, ErrorType.INVALID, f"{where} should match '{rule}'", value)]
    if keyword == "format" and rule in _NUMERIC_RANGE_CHECKS:
        # A plain error to kube-openapi, so apiextensions-apiserver reports it at no field.
        kind, described = _NUMERIC_RANGE_CHECKS[rule]
        return [
            FieldError(
                NIL_PATH, ErrorType.INVALID, f"Checked value must be of type {kind} {described} in {path}", ""
            )
        ]
    if keyword == "format":
        return [FieldError(path, wrong_type, f'{where} must be of type {rule}: "{value}"', value)]
    if keyword in ("maxItems", "maxProperties") and release.typed_reasons:
        return [
            FieldError(
                path, ErrorType.TOO_MANY, f"must have at most {rule} {_plural(rule, 'item')}", len(value)
            )
        ]
    if keyword == "maxItems":
        return [FieldError(path, ErrorType.INVALID, f"{where} should have at most {rule} items", len(value))]
    if keyword == "minItems":
        return [FieldError(path, ErrorType.INVALID, f"{where} should have at least {rule} items", len(value))]
    if keyword == "maxProperties":
        return [FieldError(path, ErrorType.INVALID, f"{where} should have at most {rule} properties", rule)]
    if keyword == "minProperties":
        shown = len(value) if release.typed_reasons else rule
        return [FieldError(path, ErrorType.INVALID, f"{where} should have at least {rule} properties", shown)]
    if keyword == "uniqueItems":
        return [FieldError(path, ErrorType.DUPLICATE, "", value)]
    if keyword == "multipleOf":
        return [FieldError(path, ErrorType.INVALID, f"{where} should be a multiple of {rule}", value)]
    # anyOf, oneOf, allOf, not: kube-openapi says the value fails the combination.
    return [FieldError(path, ErrorType.INVALID, f"{where} {error.message}", _json_type(value))]


def _any_of_errors(path: str, value: Any, release: Release) -> list[FieldError]:
    """kube-openapi's answer to a value that fits neither branch of ``anyOf: [integer, string]``:
    that it fits none, then the errors of the branch that passed the most checks, which is the
    integer's (the first; a number also passes its numeric check there, a string nothing)."""
    where = f"{path} in body"
    wrong_type = ErrorType.TYPE_INVALID if release.typed_reasons else ErrorType.INVALID
    actual = _json_type(value)
    errors = [
        FieldError(NIL_PATH, ErrorType.INVALID, f'"{path}" must validate at least one schema (anyOf)', ""),
        FieldError(path, wrong_type, f'{where} must be of type integer: "{actual}"', actual),
    ]
    if release.checks_numeric_formats and isinstance(value, float) and not value.is_integer():
        errors.append(
            FieldError(
                NIL_PATH,
                ErrorType.INVALID,
                f"Checked value must be of type integer (default format) in {path}",
                "",
            )
        )
    return errors


def _plural(count: int, noun: str) -> str:
    return noun if count == 1 else f"{noun}s"


# The numeric formats' range checks: the type and the words kube-openapi names them with.
_NUMERIC_RANGE_CHECKS: Final = {
    "int32": ("integer", "with format int32"),
    "int64": ("integer", "with format int64"),
    _DEFAULT_INTEGER_FORMAT: ("integer", "(default format)"),
    "float": ("number", "with format float"),
}


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
