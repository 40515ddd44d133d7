"""The webhook configurations the sandbox registers for the tfgang webhook process.

They carry the same names, rules, selectors, policies and paths as the Helm chart renders with its
default values (``tests/chart/test_chart_matches_sandbox_webhooks.py`` holds the two together); only
``clientConfig`` differs: there is no cluster network here, so it is a ``url`` on 127.0.0.1 with the
CA bundle of the certificate ``tfgang-certs issue`` made, where the chart names a Service.
"""

from __future__ import annotations

import base64
from typing import Any, Final

JsonObj = dict[str, Any]

OPERATOR_NAMESPACE: Final = "tfgang"
"""The chart's default release namespace; the namespaceSelector keeps it out of admission."""
MUTATING_CONFIGURATION_NAME: Final = "tfgang-mutating"
VALIDATING_CONFIGURATION_NAME: Final = "tfgang-validating"
MUTATE_PODS_WEBHOOK: Final = "mutate-pods.tfgang.kubeflow.org"
VALIDATE_TFJOBS_WEBHOOK: Final = "validate-tfjobs.tfgang.kubeflow.org"
MUTATE_PODS_PATH: Final = "/mutate-pods"
VALIDATE_TFJOBS_PATH: Final = "/validate-tfjobs"
JOB_NAME_LABEL: Final = "training.kubeflow.org/job-name"
OPERATOR_NAME_LABEL: Final = "training.kubeflow.org/operator-name"
TFJOB_OPERATOR_NAME: Final = "tfjob-controller"
TIMEOUT_SECONDS: Final = 5

_LABELS: Final = {
    "app.kubernetes.io/name": "tfgang",
    "app.kubernetes.io/component": "webhook",
    "app.kubernetes.io/managed-by": "tfgang-sandbox",
}


def _namespace_selector(operator_namespace: str) -> JsonObj:
    excluded = ["kube-system"] if operator_namespace == "kube-system" else ["kube-system", operator_namespace]
    return {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": excluded},
        ]
    }


def _policies() -> JsonObj:
    return {
        "admissionReviewVersions": ["v1", "v1beta1"],
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": TIMEOUT_SECONDS,
    }


def _client_config(base_url: str, path: str, ca_bundle: str) -> JsonObj:
    return {"url": base_url.rstrip("/") + path, "caBundle": ca_bundle}


def ca_bundle_of(ca_pem: bytes) -> str:
    """The ``caBundle`` field for a PEM CA certificate."""
    if b"-----BEGIN CERTIFICATE-----" not in ca_pem:
        raise ValueError("the CA file holds no PEM certificate")
    return base64.b64encode(ca_pem).decode("ascii")


def mutating_configuration(
    base_url: str, ca_bundle: str, operator_namespace: str = OPERATOR_NAMESPACE
) -> JsonObj:
    """Pods CREATE, only those labelled with a TFJob name, sent to ``<base_url>/mutate-pods``."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": MUTATING_CONFIGURATION_NAME, "labels": dict(_LABELS)},
        "webhooks": [
            {
                "name": MUTATE_PODS_WEBHOOK,
                "clientConfig": _client_config(base_url, MUTATE_PODS_PATH, ca_bundle),
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["pods"],
                        "scope": "Namespaced",
                    }
                ],
                "objectSelector": {
                    "matchExpressions": [
                        {"key": JOB_NAME_LABEL, "operator": "Exists"},
                        # other Kubeflow job pods carry job-name too; only TFJob pods are ours
                        {"key": OPERATOR_NAME_LABEL, "operator": "In", "values": [TFJOB_OPERATOR_NAME]},
                    ]
                },
                "namespaceSelector": _namespace_selector(operator_namespace),
                "reinvocationPolicy": "IfNeeded",
                **_policies(),
            }
        ],
    }


def validating_configuration(
    base_url: str, ca_bundle: str, operator_namespace: str = OPERATOR_NAMESPACE
) -> JsonObj:
    """TFJobs CREATE and UPDATE, sent to ``<base_url>/validate-tfjobs``."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": VALIDATING_CONFIGURATION_NAME, "labels": dict(_LABELS)},
        "webhooks": [
            {
                "name": VALIDATE_TFJOBS_WEBHOOK,
                "clientConfig": _client_config(base_url, VALIDATE_TFJOBS_PATH, ca_bundle),
                "rules": [
                    {
                        "operations": ["CREATE", "UPDATE"],
                        "apiGroups": ["kubeflow.org"],
                        "apiVersions": ["v1"],
                        "resources": ["tfjobs"],
                        "scope": "Namespaced",
                    }
                ],
                "namespaceSelector": _namespace_selector(operator_namespace),
                **_policies(),
            }
        ],
    }


def webhook_configurations(
    base_url: str, ca_bundle: str, operator_namespace: str = OPERATOR_NAMESPACE
) -> list[JsonObj]:
    """Both configurations, mutating first, for a webhook serving HTTPS at ``base_url``."""
    return [
        mutating_configuration(base_url, ca_bundle, operator_namespace),
        validating_configuration(base_url, ca_bundle, operator_namespace),
    ]
