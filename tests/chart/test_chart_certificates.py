"""The three certificate modes, and that no upgrade ever replaces the CA the API server trusts."""

from __future__ import annotations

import json
from typing import Any

from .render import find_object, find_objects, load_chart, render_chart, render_manifests
from .scenarios import SCENARIOS

NAMESPACE = "tfgang"
CERT_DIR = "/var/run/tfgang/certs"


def _webhook_pod(objects: list[dict[str, Any]]) -> dict[str, Any]:
    pod: dict[str, Any] = find_object(objects, "Deployment", "tfgang-webhook")["spec"]["template"]["spec"]
    return pod


def _cert_volume(objects: list[dict[str, Any]]) -> dict[str, Any]:
    pod = _webhook_pod(objects)
    [container] = pod["containers"]
    [mount] = [m for m in container["volumeMounts"] if m["mountPath"] == CERT_DIR]
    volume: dict[str, Any] = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    return volume


def _env(objects: list[dict[str, Any]]) -> dict[str, str]:
    [container] = _webhook_pod(objects)["containers"]
    return {item["name"]: item.get("value", "") for item in container["env"]}


def test_self_managed_webhook_is_told_which_secret_and_configurations_it_owns() -> None:
    objects = render_chart(None, NAMESPACE)
    env = _env(objects)
    assert env["TFGANG_CERT_SECRET"] == "tfgang-webhook-tls"
    assert env["TFGANG_CERT_SECRET_NAMESPACE"] == NAMESPACE
    assert env["TFGANG_SERVICE_NAME"] == find_object(objects, "Service", "tfgang-webhook")["metadata"]["name"]
    assert env["TFGANG_MUTATING_WEBHOOK_CONFIGURATION"] == "tfgang-mutating"
    assert env["TFGANG_VALIDATING_WEBHOOK_CONFIGURATION"] == "tfgang-validating"
    # it writes the PEMs it loads into a private in-memory directory, never the image
    assert _cert_volume(objects)["emptyDir"]["medium"] == "Memory"


def test_self_managed_check_interval_is_the_webhooks_and_ten_minutes_by_default() -> None:
    assert _env(render_chart(None, NAMESPACE))["TFGANG_CERT_CHECK_INTERVAL"] == "600"
    objects = render_chart({"certs": {"selfManaged": {"checkIntervalSeconds": 5}}}, NAMESPACE)
    assert _env(objects)["TFGANG_CERT_CHECK_INTERVAL"] == "5"


def test_self_managed_secret_name_is_configurable() -> None:
    objects = render_chart({"certs": {"secretName": "custom-tls"}}, NAMESPACE)
    assert _env(objects)["TFGANG_CERT_SECRET"] == "custom-tls"
    role = find_object(objects, "Role", "tfgang-webhook-certs")
    assert {
        "apiGroups": [""],
        "resources": ["secrets"],
        "resourceNames": ["custom-tls"],
        "verbs": ["get", "update"],
    } in role["rules"]


def test_self_managed_renders_no_certificate_material_so_upgrades_cannot_rotate_the_ca() -> None:
    # The webhook owns the Secret: the chart renders none and no caBundle, so `helm upgrade`
    # (with or without `lookup` seeing an existing Secret) has nothing to regenerate.
    install = render_manifests(None, NAMESPACE)
    upgrade = render_manifests(None, NAMESPACE, is_upgrade=True)
    assert install == upgrade
    # deterministic (no genCA or randomness anywhere): a fresh, uncached render is identical
    assert load_chart().render({}, name="tfgang", namespace=NAMESPACE) == install
    objects = render_chart(None, NAMESPACE)
    as_text = json.dumps(objects)
    assert "BEGIN CERTIFICATE" not in as_text
    assert '"caBundle"' not in as_text
    assert not find_objects(objects, "Secret")


def test_cert_manager_and_secret_modes_are_stable_across_upgrades() -> None:
    for scenario in ("cert-manager", "user-secret"):
        values = SCENARIOS[scenario]
        assert render_manifests(values, NAMESPACE) == render_manifests(values, NAMESPACE, is_upgrade=True)


def test_cert_manager_bootstraps_a_ca_that_outlives_serving_certificate_renewals() -> None:
    objects = render_chart(SCENARIOS["cert-manager"], NAMESPACE)
    issuers = {i["metadata"]["name"]: i["spec"] for i in find_objects(objects, "Issuer")}
    assert issuers == {
        "tfgang-selfsigned": {"selfSigned": {}},
        "tfgang-ca": {"ca": {"secretName": "tfgang-ca"}},
    }
    ca = find_object(objects, "Certificate", "tfgang-ca")["spec"]
    assert ca["isCA"] is True
    assert ca["issuerRef"]["name"] == "tfgang-selfsigned"
    assert ca["secretName"] == "tfgang-ca"
    serving = find_object(objects, "Certificate", "tfgang-webhook")["spec"]
    assert serving["issuerRef"] == {"name": "tfgang-ca", "kind": "Issuer", "group": "cert-manager.io"}
    assert serving["dnsNames"] == [
        "tfgang-webhook",
        f"tfgang-webhook.{NAMESPACE}",
        f"tfgang-webhook.{NAMESPACE}.svc",
    ]
    assert "server auth" in serving["usages"]
    assert serving["secretName"] == "tfgang-webhook-tls"
    assert _cert_volume(objects)["secret"]["secretName"] == "tfgang-webhook-tls"
    assert "TFGANG_CERT_SECRET" not in _env(objects)


def test_cert_manager_with_an_existing_issuer_creates_no_issuers() -> None:
    objects = render_chart(SCENARIOS["cert-manager-cluster-issuer"], NAMESPACE)
    assert not find_objects(objects, "Issuer")
    [certificate] = find_objects(objects, "Certificate")
    assert certificate["spec"]["issuerRef"] == {
        "name": "ca",
        "kind": "ClusterIssuer",
        "group": "cert-manager.io",
    }


def test_secret_mode_mounts_the_users_secret_and_grants_no_secret_access() -> None:
    objects = render_chart(SCENARIOS["user-secret"], NAMESPACE)
    volume = _cert_volume(objects)
    assert volume["secret"]["secretName"] == "my-webhook-tls"
    assert not find_objects(objects, "Certificate")
    assert not find_objects(objects, "Role", "tfgang-webhook-certs")
    assert "TFGANG_CERT_SECRET" not in _env(objects)
