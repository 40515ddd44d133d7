"""Label and field selectors, parsed and worded as kube-apiserver does."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sandbox.apiserver import errors
from sandbox.apiserver.jsonobj import JsonObj

_LABEL_REQUIREMENT = re.compile(
    r"^\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9_.\-/]+)\s*"
    r"(?:(?P<op>==|!=|=|\s+in\s+|\s+notin\s+)\s*(?P<value>\([^)]*\)|[A-Za-z0-9_.\-]*))?\s*$"
)


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!"
    values: frozenset[str]

    def matches(self, labels: dict[str, str]) -> bool:
        if self.operator == "exists":
            return self.key in labels
        if self.operator == "!":
            return self.key not in labels
        if self.operator in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part for part in parts if part.strip()]


def parse_label_selector(text: str) -> list[Requirement]:
    requirements = []
    for part in _split_top_level(text or ""):
        match = _LABEL_REQUIREMENT.match(part)
        if not match:
            raise errors.bad_request(
                f"unable to parse requirement: found '{part.strip()}', expected: identifier"
            )
        key, op, value = match.group("key"), (match.group("op") or "").strip(), match.group("value")
        if match.group("neg"):
            if op:
                raise errors.bad_request(f"unable to parse requirement: {part.strip()}")
            requirements.append(Requirement(key, "!", frozenset()))
        elif not op:
            requirements.append(Requirement(key, "exists", frozenset()))
        elif op in ("in", "notin"):
            if not value or not value.startswith("("):
                raise errors.bad_request(f"unable to parse requirement: found '{value}', expected: '('")
            values = frozenset(v.strip() for v in value[1:-1].split(",") if v.strip())
            requirements.append(Requirement(key, op, values))
        else:
            requirements.append(Requirement(key, "!=" if op == "!=" else "=", frozenset([value or ""])))
    return requirements


def labels_match(requirements: list[Requirement], labels: dict[str, str] | None) -> bool:
    actual = labels or {}
    return all(requirement.matches(actual) for requirement in requirements)


def match_label_selector_object(selector: JsonObj | None, labels: dict[str, str] | None) -> bool:
    """A metav1.LabelSelector (matchLabels + matchExpressions); an empty selector matches everything."""
    if not selector:
        return True
    actual = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if actual.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = set(expression.get("values") or [])
        if operator == "In" and not (key in actual and actual[key] in values):
            return False
        if operator == "NotIn" and key in actual and actual[key] in values:
            return False
        if operator == "Exists" and key not in actual:
            return False
        if operator == "DoesNotExist" and key in actual:
            return False
    return True


# --- field selectors -----------------------------------------------------------------------------
@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    negated: bool


def _dig(obj: JsonObj, dotted: str) -> str:
    current: Any = obj
    for part in dotted.split("."):
        if not isinstance(current, dict):
            return ""
        current = current.get(part)
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


# Fields each built-in kind supports beyond metadata.name and metadata.namespace.
BUILTIN_FIELDS: dict[str, tuple[str, ...]] = {
    "pods": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "events": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "nodes": ("spec.unschedulable",),
    "secrets": ("type",),
    "namespaces": ("status.phase",),
}


def parse_field_selector(
    text: str, resource: str, kind: str, extra_fields: tuple[str, ...] = ()
) -> list[FieldRequirement]:
    allowed = {"metadata.name", "metadata.namespace", *BUILTIN_FIELDS.get(resource, ()), *extra_fields}
    requirements = []
    for part in (text or "").split(","):
        if not part.strip():
            continue
        if "!=" in part:
            field, value, negated = *part.split("!=", 1), True
        elif "==" in part:
            field, value, negated = *part.split("==", 1), False
        elif "=" in part:
            field, value, negated = *part.split("=", 1), False
        else:
            raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        field = field.strip()
        if field.startswith("."):
            field = field[1:]
        if field not in allowed:
            raise errors.bad_request(f"field label not supported: {field}")
        requirements.append(FieldRequirement(field, value.strip(), negated))
    return requirements


def field_value(obj: JsonObj, field: str) -> str:
    if field == "source":
        return _dig(obj, "source.component")
    return _dig(obj, field)


def fields_match(requirements: list[FieldRequirement], obj: JsonObj) -> bool:
    for requirement in requirements:
        equal = field_value(obj, requirement.field) == requirement.value
        if equal == requirement.negated:
            return False
    return True


def build_filter(
    label_selector: str, field_selector: str, resource: str, kind: str, extra_fields: tuple[str, ...] = ()
) -> Callable[[JsonObj], bool] | None:
    labels = parse_label_selector(label_selector)
    fields = parse_field_selector(field_selector, resource, kind, extra_fields)
    if not labels and not fields:
        return None

    def matches(obj: JsonObj) -> bool:
        meta = obj.get("metadata") or {}
        return labels_match(labels, meta.get("labels")) and fields_match(fields, obj)

    return matches
