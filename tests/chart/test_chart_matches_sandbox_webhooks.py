"""The sandbox registers the webhook configurations the chart renders (it renders them itself): same
names, rules, selectors, policies and paths. Only the way the API server reaches the webhook is
rewritten (a Service in the chart, a 127.0.0.1 URL in the sandbox)."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import urlsplit

import pytest

from sandbox.webhook_configs import ca_bundle_of, webhook_configurations
from tests.chart.render import render_chart

CA_PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
SANDBOX_URL = "https://127.0.0.1:9443"


def _chart_configurations(namespace: str) -> dict[str, dict[str, Any]]:
    return {
        obj["kind"]: obj
        for obj in render_chart(namespace=namespace)
        if obj["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    }


def _sandbox_configurations(namespace: str) -> dict[str, dict[str, Any]]:
    configurations = webhook_configurations(SANDBOX_URL, ca_bundle_of(CA_PEM), namespace)
    return {obj["kind"]: obj for obj in configurations}


def _without_client_config(webhook: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in webhook.items() if key != "clientConfig"}


@pytest.mark.parametrize("namespace", ["tfgang", "ml-platform"])
def test_sandbox_registers_the_charts_webhooks_field_for_field(namespace: str) -> None:
    chart = _chart_configurations(namespace)
    sandbox = _sandbox_configurations(namespace)
    kinds = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
    assert sorted(chart) == sorted(sandbox) == kinds
    for kind, chart_config in chart.items():
        sandbox_config = sandbox[kind]
        assert sandbox_config["apiVersion"] == chart_config["apiVersion"]
        assert sandbox_config["metadata"]["name"] == chart_config["metadata"]["name"]
        chart_hooks = chart_config["webhooks"]
        sandbox_hooks = sandbox_config["webhooks"]
        assert [hook["name"] for hook in sandbox_hooks] == [hook["name"] for hook in chart_hooks]
        for chart_hook, sandbox_hook in zip(chart_hooks, sandbox_hooks, strict=True):
            assert _without_client_config(sandbox_hook) == _without_client_config(chart_hook)


def test_sandbox_webhooks_call_the_charts_paths_on_loopback_with_the_ca() -> None:
    chart = _chart_configurations("tfgang")
    sandbox = _sandbox_configurations("tfgang")
    for kind, chart_config in chart.items():
        for chart_hook, sandbox_hook in zip(chart_config["webhooks"], sandbox[kind]["webhooks"], strict=True):
            url = urlsplit(sandbox_hook["clientConfig"]["url"])
            assert (url.scheme, url.hostname, url.port) == ("https", "127.0.0.1", 9443)
            assert url.path == chart_hook["clientConfig"]["service"]["path"]
            assert base64.b64decode(sandbox_hook["clientConfig"]["caBundle"]) == CA_PEM


def test_a_ca_file_without_a_certificate_is_refused() -> None:
    with pytest.raises(ValueError, match="no PEM certificate"):
        ca_bundle_of(b"not a certificate")
