"""One scope: the webhooks' namespaceSelector and the controller's --namespace-selector come from the
same chart value, so a namespace is served by the webhooks and the controller alike, or by neither.

The controller's reading of its selector (``controller.scope``) is checked against the sandbox API
server's matching of the webhooks' selector (``sandbox.apiserver.selectors``, as kube-apiserver
matches a namespaceSelector) over namespaces with various labels.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.config import parse_config as parse_controller_config
from sandbox.apiserver.selectors import match_label_selector_object

from .render import find_object, render_chart
from .test_chart_component_flags import container_environment

NAMESPACE = "tfgang"
NAME_LABEL = "kubernetes.io/metadata.name"

SCOPES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "excluded": {"scope": {"excludedNamespaces": ["batch", "legacy"]}},
    "opt-in label": {
        "scope": {
            "namespaceSelectorExpressions": [{"key": "tfgang.io/serve", "operator": "In", "values": ["yes"]}]
        }
    },
    "older webhook values": {
        "webhook": {
            "excludedNamespaces": ["legacy"],
            "namespaceSelectorExpressions": [{"key": "team", "operator": "Exists"}],
        }
    },
    "both": {
        "scope": {"excludedNamespaces": ["batch"]},
        "webhook": {"excludedNamespaces": ["legacy"]},
    },
    "namespace-scoped": {"watchNamespaces": ["team-a"]},
}


def _namespace(name: str, **labels: str) -> dict[str, str]:
    return {NAME_LABEL: name, **labels}


NAMESPACES = [
    _namespace("kube-system"),
    _namespace(NAMESPACE),
    _namespace("default"),
    _namespace("team-a", team="a"),
    _namespace("team-b", team="b", **{"tfgang.io/serve": "yes"}),
    _namespace("batch", **{"tfgang.io/serve": "yes"}),
    _namespace("legacy", team="old"),
    {},  # a namespace on Kubernetes < 1.21 (no name label): matched by name rules as the API server does
]


def _selectors(values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    objects = render_chart(values, NAMESPACE)
    mutating = find_object(objects, "MutatingWebhookConfiguration", "tfgang-mutating")
    validating = find_object(objects, "ValidatingWebhookConfiguration", "tfgang-validating")
    config = parse_controller_config([], container_environment(objects, "tfgang-controller"))
    [pods] = mutating["webhooks"]
    [tfjobs] = validating["webhooks"]
    return pods["namespaceSelector"], tfjobs["namespaceSelector"], {"config": config}


@pytest.mark.parametrize("scenario", list(SCOPES))
def test_the_controller_serves_exactly_the_namespaces_the_webhooks_match(scenario: str) -> None:
    pods, tfjobs, controller = _selectors(SCOPES[scenario])
    scope = controller["config"].scope
    assert pods == tfjobs
    assert not scope.everywhere
    for labels in NAMESPACES:
        webhooks = match_label_selector_object(pods, labels)
        assert scope.admits(labels) == webhooks, (scenario, labels, pods, scope)


@pytest.mark.parametrize("scenario", list(SCOPES))
def test_kube_system_and_the_release_namespace_are_outside_every_scope(scenario: str) -> None:
    _, _, controller = _selectors(SCOPES[scenario])
    scope = controller["config"].scope
    assert not scope.admits(_namespace("kube-system"))
    assert not scope.admits(_namespace(NAMESPACE))


def test_each_value_moves_the_scope_of_both() -> None:
    served = {
        scenario: {
            labels.get(NAME_LABEL, "")
            for labels in NAMESPACES
            if _selectors(values)[2]["config"].scope.admits(labels)
        }
        for scenario, values in SCOPES.items()
    }
    assert served["defaults"] == {"default", "team-a", "team-b", "batch", "legacy", ""}
    assert served["excluded"] == {"default", "team-a", "team-b", ""}
    assert served["opt-in label"] == {"team-b", "batch"}
    assert served["older webhook values"] == {"team-a", "team-b"}
    assert served["both"] == {"default", "team-a", "team-b", ""}
    assert served["namespace-scoped"] == {"team-a"}
