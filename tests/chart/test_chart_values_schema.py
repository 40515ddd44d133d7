"""values.schema.json rejects bad values before anything renders, and Helm's linter finds nothing."""

from __future__ import annotations

import json
from typing import Any

import helm_python
import pytest

from .render import CHART_DIR, load_chart, render_chart
from .scenarios import SCENARIOS

BAD_VALUES: dict[str, tuple[dict[str, Any], str]] = {
    "typo at the top": ({"watchNamespace": ["a"]}, "watchNamespace"),
    "typo in a component": ({"webhook": {"replica": 3}}, "replica"),
    "unknown failure policy": ({"webhook": {"failurePolicy": "Maybe"}}, "failurePolicy"),
    "unknown certificate mode": ({"certs": {"mode": "helm"}}, "mode"),
    "zero webhook replicas": ({"webhook": {"replicas": 0}}, "replicas"),
    "fractional replicas": ({"controller": {"replicas": 1.5}}, "replicas"),
    "timeout above 30": ({"webhook": {"timeoutSeconds": 31}}, "timeoutSeconds"),
    "timeout below 1": ({"webhook": {"timeoutSeconds": 0}}, "timeoutSeconds"),
    "timeout as a string": ({"webhook": {"timeoutSeconds": "5"}}, "timeoutSeconds"),
    "port out of range": ({"webhook": {"port": 70000}}, "port"),
    "unknown reinvocation policy": ({"webhook": {"reinvocationPolicy": "Always"}}, "reinvocationPolicy"),
    "bad anti-affinity mode": ({"controller": {"podAntiAffinity": "soft"}}, "podAntiAffinity"),
    "two watched namespaces": ({"watchNamespaces": ["a", "b"]}, "watchNamespaces"),
    "namespace not a DNS label": ({"watchNamespaces": ["Team_A"]}, "watchNamespaces"),
    "secret mode without a secret": ({"certs": {"mode": "secret", "caBundle": "QUJD"}}, "secretName"),
    "secret mode without a CA bundle": ({"certs": {"mode": "secret", "secretName": "tls"}}, "caBundle"),
    "CA bundle not base64": ({"certs": {"caBundle": "not base64!"}}, "caBundle"),
    "issuerRef without a name": (
        {"certs": {"certManager": {"issuerRef": {"kind": "ClusterIssuer"}}}},
        "name",
    ),
    "unknown issuer kind": (
        {"certs": {"certManager": {"issuerRef": {"name": "x", "kind": "Vault"}}}},
        "kind",
    ),
    "bad duration": ({"certs": {"certManager": {"duration": "90 days"}}}, "duration"),
    "bad PDB percentage": ({"webhook": {"podDisruptionBudget": {"minAvailable": "150%"}}}, "minAvailable"),
    "bad resource quantity": ({"webhook": {"resources": {"limits": {"memory": "lots"}}}}, "memory"),
    "unknown pull policy": ({"image": {"pullPolicy": "Sometimes"}}, "pullPolicy"),
    "empty repository": ({"image": {"repository": ""}}, "repository"),
    "unknown log level": ({"logLevel": "TRACE"}, "logLevel"),
    "negative QPS": ({"controller": {"kubeApiQps": 0}}, "kubeApiQps"),
    "zero header timeout": (
        {"webhook": {"connections": {"headerTimeoutSeconds": 0}}},
        "headerTimeoutSeconds",
    ),
    "no connections at all": ({"webhook": {"connections": {"maxConnections": 0}}}, "maxConnections"),
    "typo in connections": ({"webhook": {"connections": {"idleTimeout": 5}}}, "idleTimeout"),
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_schema_rejects_bad_values_with_a_message_naming_the_key(case: str) -> None:
    values, key = BAD_VALUES[case]
    with pytest.raises(helm_python.HelmValuesError) as caught:
        load_chart().validate_schema(values)
    assert key in str(caught.value)


def test_rendering_enforces_the_schema_too() -> None:
    with pytest.raises(helm_python.HelmValuesError, match="failurePolicy"):
        render_chart({"webhook": {"failurePolicy": "Maybe"}})


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_schema_accepts_every_documented_scenario(scenario: str) -> None:
    load_chart().validate_schema(SCENARIOS[scenario])


def test_schema_accepts_the_charts_own_defaults() -> None:
    load_chart().validate_schema(load_chart().values)


def _undescribed_keys(values: dict[str, Any], schema: dict[str, Any], path: str = "") -> list[str]:
    """Keys of ``values`` that a schema with explicit ``properties`` does not name, recursively."""
    properties = schema.get("properties")
    if properties is None:
        return []  # a free-form object (securityContext, resources, ...)
    missing = []
    for key, value in values.items():
        if key not in properties:
            missing.append(path + key)
        elif isinstance(value, dict):
            missing += _undescribed_keys(value, properties[key], f"{path}{key}.")
    return missing


def test_every_default_value_is_described_by_the_schema() -> None:
    schema = load_chart().schema
    assert schema is not None
    assert schema["additionalProperties"] is False
    resolved = json.loads(json.dumps(schema))
    for name, definition in schema["definitions"].items():
        text = json.dumps(resolved).replace(
            json.dumps({"$ref": f"#/definitions/{name}"}), json.dumps(definition)
        )
        resolved = json.loads(text)
    assert _undescribed_keys(load_chart().values, resolved) == []
    assert _undescribed_keys({"webhook": {"replica": 1}}, resolved) == ["webhook.replica"]


def test_template_level_checks_fail_with_a_clear_message() -> None:
    with pytest.raises(helm_python.HelmRenderError, match=r"webhook.serviceAccount.name is required"):
        render_chart({"webhook": {"serviceAccount": {"create": False}}})
    with pytest.raises(
        helm_python.HelmRenderError, match=r"serviceMonitor.enabled needs metrics.service.enabled"
    ):
        render_chart({"metrics": {"service": {"enabled": False}, "serviceMonitor": {"enabled": True}}})


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_helm_lint_strict_reports_nothing_above_info(scenario: str) -> None:
    report = helm_python.lint(CHART_DIR, SCENARIOS[scenario], strict=True, namespace="tfgang")
    assert report["errors"] == []
    findings = [m for m in report["messages"] if m["severity"] >= 2]
    assert findings == []


def test_helm_lint_reports_schema_violations_as_errors() -> None:
    report = helm_python.lint(
        CHART_DIR, {"webhook": {"failurePolicy": "Maybe"}}, strict=True, namespace="tfgang"
    )
    assert any("failurePolicy" in error for error in report["errors"])
