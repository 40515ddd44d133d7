"""Which namespaces the controller serves: the webhooks' namespaceSelector, matched the same way.

The chart renders one selector (its value ``scope``, with ``watchNamespaces`` and the older
``webhook.excludedNamespaces``) into both webhook configurations' ``namespaceSelector`` and into
the controller's ``--namespace-selector``, as the same ``metav1.LabelSelector``. kube-apiserver
matches it against the labels of a request's namespace; the controller matches it against the
labels of a job's namespace, from a watch of Namespaces. So a namespace is served by both or by
neither, whatever labels it carries (on Kubernetes before 1.21 a namespace has no
``kubernetes.io/metadata.name`` label unless someone sets it, and a selector on it then matches
for the webhooks and the controller alike).

A TFJob outside the scope is left alone: no PodGroup, no pods, no status. It gets one Warning
event ``OutsideScope`` and one log line per version of the job (``OutsideScopeNotices``, bounded),
so the user sees why nothing happens, without a storm.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml

from tfjob.planner.actions import WARNING, Event

IN: Final = "In"
NOT_IN: Final = "NotIn"
EXISTS: Final = "Exists"
DOES_NOT_EXIST: Final = "DoesNotExist"
_OPERATORS: Final = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST})
EVENT_OUTSIDE_SCOPE: Final = "OutsideScope"
# The selector is quoted in messages; a long one is cut there (the flag's value is the whole).
_MAX_QUOTED: Final = 300
NOTICES_CAPACITY: Final = 4096


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, Any]) -> bool:
        """apimachinery's rules: ``NotIn`` and ``DoesNotExist`` match a namespace without the key."""
        if self.operator == IN:
            return self.key in labels and labels[self.key] in self.values
        if self.operator == NOT_IN:
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == EXISTS:
            return self.key in labels
        return self.key not in labels


@dataclass(frozen=True)
class NamespaceScope:
    """A namespace label selector; no requirements: every namespace."""

    requirements: tuple[Requirement, ...] = ()
    text: str = ""  # the selector as given, quoted in events and logs

    @property
    def everywhere(self) -> bool:
        return not self.requirements

    def admits(self, labels: Mapping[str, Any]) -> bool:
        return all(requirement.matches(labels) for requirement in self.requirements)

    def quoted(self) -> str:
        return self.text if len(self.text) <= _MAX_QUOTED else self.text[: _MAX_QUOTED - 3] + "..."


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{what} must be a list of strings")
    return value


def _requirement(expression: Any) -> Requirement:
    if not isinstance(expression, dict):
        raise ValueError("each matchExpressions entry must be an object")
    unknown = set(expression) - {"key", "operator", "values"}
    if unknown:
        raise ValueError(f"unknown field(s) in a matchExpressions entry: {', '.join(sorted(unknown))}")
    key, operator = expression.get("key"), expression.get("operator")
    if not isinstance(key, str) or not key:
        raise ValueError("a matchExpressions entry needs a key")
    if operator not in _OPERATORS:
        raise ValueError(
            f"operator of {key!r} must be one of In, NotIn, Exists, DoesNotExist, not {operator!r}"
        )
    values = _strings(expression.get("values") or [], f"values of {key!r}")
    if operator in (IN, NOT_IN) and not values:
        raise ValueError(f"{operator} on {key!r} needs values")
    if operator in (EXISTS, DOES_NOT_EXIST) and values:
        raise ValueError(f"{operator} on {key!r} takes no values")
    return Requirement(key, str(operator), frozenset(values))


def parse_namespace_selector(text: str) -> NamespaceScope:
    """A ``metav1.LabelSelector`` in JSON (or YAML): ``matchLabels`` and ``matchExpressions``, as
    the webhooks' ``namespaceSelector`` holds it. Empty text or ``{}``: every namespace."""
    if not text.strip():
        return NamespaceScope()
    try:
        selector = json.loads(text)
    except ValueError:
        try:
            selector = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"not JSON or YAML: {exc}") from None
    if selector is None:
        return NamespaceScope()
    if not isinstance(selector, dict):
        raise ValueError("must be a label selector object (matchLabels, matchExpressions)")
    unknown = set(selector) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise ValueError(f"unknown field(s): {', '.join(sorted(unknown))}")
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in match_labels.items()
    ):
        raise ValueError("matchLabels must map strings to strings")
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise ValueError("matchExpressions must be a list")
    requirements = [Requirement(key, IN, frozenset({value})) for key, value in match_labels.items()]
    requirements += [_requirement(expression) for expression in expressions]
    canonical = json.dumps(selector, separators=(",", ":"), sort_keys=True)
    return NamespaceScope(tuple(requirements), canonical if requirements else "")


def outside_scope_event(namespace: str, scope: NamespaceScope) -> Event:
    return Event(
        WARNING,
        EVENT_OUTSIDE_SCOPE,
        f"namespace \"{namespace}\" is outside tfgang's scope: its labels do not match the controller's "
        f"--namespace-selector {scope.quoted()} (the chart's value scope, which the admission webhooks "
        "share), so this TFJob is left alone: no PodGroup, no pods",
    )


class OutsideScopeNotices:
    """Which job versions were already told they are outside the scope: each is told once.

    Bounded: the oldest entries go first, so a cluster of many out-of-scope jobs costs a fixed
    amount of memory; a job forgotten that way is at most told once more.
    """

    def __init__(self, capacity: int = NOTICES_CAPACITY) -> None:
        self._capacity = capacity
        self._told: OrderedDict[str, str] = OrderedDict()

    def first_time(self, uid: str, resource_version: str) -> bool:
        """True once per (job, version); afterwards False until the job changes."""
        if self._told.get(uid) == resource_version:
            self._told.move_to_end(uid)
            return False
        self._told[uid] = resource_version
        self._told.move_to_end(uid)
        while len(self._told) > self._capacity:
            self._told.popitem(last=False)
        return True

    def forget(self, uid: str) -> None:
        self._told.pop(uid, None)

    def __len__(self) -> int:
        return len(self._told)
