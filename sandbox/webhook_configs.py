"""The webhook configurations the sandbox registers for the tfgang webhook process: the chart's own.

They are rendered from ``charts/tfgang`` with its default values (``sandbox.chart``), so names,
rules, selectors, policies and paths have one source. Only ``clientConfig`` is rewritten: there
is no cluster network here, so the chart's Service becomes a ``url`` on 127.0.0.1 with the same
path, carrying the CA bundle of the certificate ``tfgang-certs issue`` made.
"""

from __future__ import annotations

import base64
from typing import Final

from kubeobjects.meta import mapping
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.chart import render_chart

OPERATOR_NAMESPACE: Final = "tfgang"
"""The chart's default release namespace; the namespaceSelector keeps it out of admission."""
KINDS: Final = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def ca_bundle_of(ca_pem: bytes) -> str:
    """The ``caBundle`` field for a PEM CA certificate."""
    if b"-----BEGIN CERTIFICATE-----" not in ca_pem:
        raise ValueError("the CA file holds no PEM certificate")
    return base64.b64encode(ca_pem).decode("ascii")


def controller_scope(operator_namespace: str = OPERATOR_NAMESPACE) -> str:
    """The chart's ``--namespace-selector`` for the controller (JSON): the same scope as the
    webhooks' namespaceSelector, so the local cluster never half-runs a job the webhook skips."""
    for obj in render_chart(namespace=operator_namespace):
        if obj["kind"] != "Deployment":
            continue
        for container in obj["spec"]["template"]["spec"]["containers"]:
            for variable in container.get("env") or ():
                if variable.get("name") == "TFGANG_NAMESPACE_SELECTOR":
                    return str(variable["value"])
    raise LookupError("the chart gives the controller no TFGANG_NAMESPACE_SELECTOR")


def webhook_configurations(
    base_url: str, ca_bundle: str, operator_namespace: str = OPERATOR_NAMESPACE
) -> list[JsonObj]:
    """The chart's configurations, mutating first, for a webhook serving HTTPS at ``base_url``."""
    chart = render_chart(namespace=operator_namespace)
    rendered = {obj["kind"]: obj for obj in chart if obj["kind"] in KINDS}
    configurations = [rendered[kind] for kind in KINDS]
    for configuration in configurations:
        for webhook in configuration["webhooks"]:
            path = mapping(mapping(webhook.get("clientConfig")).get("service")).get("path") or "/"
            webhook["clientConfig"] = {"url": base_url.rstrip("/") + str(path), "caBundle": ca_bundle}
    return configurations
