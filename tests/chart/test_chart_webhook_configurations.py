"""The two webhook configurations: rules, selectors, policies and paths exactly as designed."""

from __future__ import annotations

from typing import Any

import pytest

from .render import find_object, render_chart
from .scenarios import SCENARIOS, USER_CA_BUNDLE

NAMESPACE = "tfgang"


def _mutating(values: dict[str, Any] | None = None) -> dict[str, Any]:
    configuration = find_object(render_chart(values, NAMESPACE), "MutatingWebhookConfiguration")
    [webhook] = configuration["webhooks"]
    return dict(webhook)


def _validating(values: dict[str, Any] | None = None) -> dict[str, Any]:
    configuration = find_object(render_chart(values, NAMESPACE), "ValidatingWebhookConfiguration")
    [webhook] = configuration["webhooks"]
    return dict(webhook)


def _excluded(webhook: dict[str, Any]) -> list[str]:
    [not_in] = [
        e
        for e in webhook["namespaceSelector"]["matchExpressions"]
        if e["key"] == "kubernetes.io/metadata.name" and e["operator"] == "NotIn"
    ]
    return list(not_in["values"])


def test_pod_mutation_webhook_by_default() -> None:
    objects = render_chart(None, NAMESPACE)
    configuration = find_object(objects, "MutatingWebhookConfiguration")
    assert configuration["metadata"]["name"] == "tfgang-mutating"
    webhook = _mutating()
    assert webhook["name"] == "mutate-pods.tfgang.kubeflow.org"
    assert webhook["clientConfig"] == {
        "service": {"name": "tfgang-webhook", "namespace": NAMESPACE, "path": "/mutate-pods", "port": 443}
    }
    assert webhook["rules"] == [
        {
            "operations": ["CREATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["pods"],
            "scope": "Namespaced",
        }
    ]
    assert webhook["objectSelector"] == {
        "matchExpressions": [
            {"key": "training.kubeflow.org/job-name", "operator": "Exists"},
            {"key": "training.kubeflow.org/operator-name", "operator": "In", "values": ["tfjob-controller"]},
        ]
    }
    assert webhook["namespaceSelector"] == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", NAMESPACE]}
        ]
    }
    assert webhook["failurePolicy"] == "Fail"
    assert webhook["matchPolicy"] == "Equivalent"
    assert webhook["sideEffects"] == "None"
    assert webhook["timeoutSeconds"] == 5
    assert webhook["admissionReviewVersions"] == ["v1", "v1beta1"]
    assert webhook["reinvocationPolicy"] == "IfNeeded"


def test_tfjob_validation_webhook_by_default() -> None:
    objects = render_chart(None, NAMESPACE)
    configuration = find_object(objects, "ValidatingWebhookConfiguration")
    assert configuration["metadata"]["name"] == "tfgang-validating"
    webhook = _validating()
    assert webhook["name"] == "validate-tfjobs.tfgang.kubeflow.org"
    assert webhook["clientConfig"] == {
        "service": {"name": "tfgang-webhook", "namespace": NAMESPACE, "path": "/validate-tfjobs", "port": 443}
    }
    assert webhook["rules"] == [
        {
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": ["kubeflow.org"],
            "apiVersions": ["v1"],
            "resources": ["tfjobs"],
            "scope": "Namespaced",
        }
    ]
    assert "objectSelector" not in webhook
    assert webhook["namespaceSelector"] == _mutating()["namespaceSelector"]
    assert webhook["failurePolicy"] == "Fail"
    assert webhook["matchPolicy"] == "Equivalent"
    assert webhook["sideEffects"] == "None"
    assert webhook["timeoutSeconds"] == 5
    assert webhook["admissionReviewVersions"] == ["v1", "v1beta1"]
    assert "reinvocationPolicy" not in webhook  # a mutating-only field


def test_both_webhooks_point_at_the_rendered_service_and_its_port() -> None:
    objects = render_chart(None, NAMESPACE)
    service = find_object(objects, "Service", "tfgang-webhook")
    [port] = service["spec"]["ports"]
    for webhook in (_mutating(), _validating()):
        assert webhook["clientConfig"]["service"]["name"] == service["metadata"]["name"]
        assert webhook["clientConfig"]["service"]["namespace"] == service["metadata"]["namespace"]
        assert webhook["clientConfig"]["service"]["port"] == port["port"]


def test_the_release_namespace_is_always_excluded() -> None:
    objects = render_chart(None, "ml-operators")
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        [webhook] = find_object(objects, kind)["webhooks"]
        assert _excluded(webhook) == ["kube-system", "ml-operators"]


def test_exclusions_and_selector_expressions_extend_the_namespace_selector() -> None:
    for webhook in (_mutating(SCENARIOS["everything-on"]), _validating(SCENARIOS["everything-on"])):
        assert _excluded(webhook) == ["kube-system", NAMESPACE, "monitoring"]
        assert {"key": "tfgang.kubeflow.org/webhook", "operator": "NotIn", "values": ["disabled"]} in (
            webhook["namespaceSelector"]["matchExpressions"]
        )


def test_duplicate_exclusions_are_listed_once() -> None:
    webhook = _mutating({"webhook": {"excludedNamespaces": ["kube-system", NAMESPACE, "x"]}})
    assert _excluded(webhook) == ["kube-system", NAMESPACE, "x"]


def test_namespace_scoped_mode_matches_only_the_watched_namespace() -> None:
    for webhook in (_mutating(SCENARIOS["namespace-scoped"]), _validating(SCENARIOS["namespace-scoped"])):
        assert {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a"]} in (
            webhook["namespaceSelector"]["matchExpressions"]
        )
        assert _excluded(webhook) == ["kube-system", NAMESPACE]


@pytest.mark.parametrize(
    ("values", "field", "expected"),
    [
        ({"webhook": {"failurePolicy": "Ignore"}}, "failurePolicy", "Ignore"),
        ({"webhook": {"timeoutSeconds": 10}}, "timeoutSeconds", 10),
    ],
)
def test_policies_are_configurable_for_both_webhooks(
    values: dict[str, Any], field: str, expected: object
) -> None:
    assert _mutating(values)[field] == expected
    assert _validating(values)[field] == expected


def test_reinvocation_policy_is_configurable() -> None:
    assert _mutating({"webhook": {"reinvocationPolicy": "Never"}})["reinvocationPolicy"] == "Never"


def test_self_managed_mode_leaves_ca_bundle_and_annotations_to_the_webhook() -> None:
    objects = render_chart(None, NAMESPACE)
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        configuration = find_object(objects, kind)
        assert "annotations" not in configuration["metadata"]
        assert "caBundle" not in configuration["webhooks"][0]["clientConfig"]


@pytest.mark.parametrize("scenario", ["cert-manager", "cert-manager-cluster-issuer"])
def test_cert_manager_mode_injects_the_ca_of_the_serving_certificate(scenario: str) -> None:
    objects = render_chart(SCENARIOS[scenario], NAMESPACE)
    certificate = find_object(objects, "Certificate", "tfgang-webhook")
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        configuration = find_object(objects, kind)
        assert configuration["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": f"{NAMESPACE}/{certificate['metadata']['name']}"
        }
        assert "caBundle" not in configuration["webhooks"][0]["clientConfig"]


def test_secret_mode_carries_the_users_ca_bundle() -> None:
    objects = render_chart(SCENARIOS["user-secret"], NAMESPACE)
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        configuration = find_object(objects, kind)
        assert configuration["webhooks"][0]["clientConfig"]["caBundle"] == USER_CA_BUNDLE
        assert "annotations" not in configuration["metadata"]
