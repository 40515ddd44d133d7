"""tfgang as the README installs it, on a real node: ``helm test`` passes, kube-apiserver calls the
webhook through its Service, the controller runs on in-cluster configuration under the chart's
ServiceAccount, and the self-managed certificate is served and, once rotated, reloaded without a
restart."""

from __future__ import annotations

import base64
import datetime
import json
import uuid
from typing import Any

import pytest

from certs.secret import decode_secret_data, encode_secret_data
from certs.serving import dns_names_of, issue_serving_certificate
from realcluster.helmrelease import (
    CERT_SECRET,
    CONTROLLER,
    MUTATING,
    NAMESPACE,
    VALIDATING,
    WEBHOOK,
    Release,
    localised,
    readme_install_commands,
)
from realcluster.onenode import OneNode
from tests.realnode.installed.podview import (
    apply,
    file_in,
    job_state,
    pods_of,
    restart_counts,
    same_certificate,
    served_certificate,
    small_job,
    until,
)

pytestmark = [pytest.mark.real_node, pytest.mark.timeout(300)]

CERT_FILE = "/var/run/tfgang/certs/tls.crt"
WEBHOOK_PORT = 9443
LEASE = "1ca428e5.training-operator.kubeflow.org"


def _secret(release: Release) -> dict[str, Any]:
    return release.kubectl_json("-n", NAMESPACE, "get", "secret", CERT_SECRET)


def _serving_pem(secret: dict[str, Any]) -> str:
    return base64.b64decode(secret["data"]["tls.crt"]).decode()


def test_helm_test_passes(tfgang: Release) -> None:
    _install, test = readme_install_commands()
    done = tfgang.run(localised(test, tfgang.images.tfgang), timeout=240)
    assert "Phase:" in done.stdout and "Succeeded" in done.stdout, done.stdout


def test_kube_apiserver_calls_the_webhook_through_its_service(tfgang: Release) -> None:
    ca = base64.b64decode(_secret(tfgang)["data"]["ca.crt"]).decode()
    for kind, name in (
        ("mutatingwebhookconfiguration", MUTATING),
        ("validatingwebhookconfiguration", VALIDATING),
    ):
        for webhook in tfgang.kubectl_json("get", kind, name)["webhooks"]:
            client = webhook["clientConfig"]
            assert "url" not in client, name
            assert client["service"]["name"] == WEBHOOK and client["service"]["namespace"] == NAMESPACE
            assert base64.b64decode(client["caBundle"]).decode() == ca, (
                f"{name}: caBundle is not the Secret's CA"
            )

    slices = tfgang.kubectl_json(
        "-n", NAMESPACE, "get", "endpointslices", "-l", f"kubernetes.io/service-name={WEBHOOK}"
    )
    ready = {
        address
        for item in slices["items"]
        for endpoint in item.get("endpoints") or ()
        if (endpoint.get("conditions") or {}).get("ready")
        for address in endpoint["addresses"]
    }
    assert ready == {pod["status"]["podIP"] for pod in pods_of(tfgang, "webhook")}

    # A TFJob pod in real containers: kube-apiserver had the webhook add TF_CONFIG, which the
    # container prints from its environment.
    namespace = f"install-{uuid.uuid4().hex[:6]}"
    tfgang.run(["kubectl", "create", "namespace", namespace])
    try:
        # Two workers: a single worker is not distributed and gets no TF_CONFIG (upstream's rule).
        apply(tfgang, small_job("printer", namespace, 'echo "TF_CONFIG=$TF_CONFIG"', workers=2))
        until(lambda: job_state(tfgang, namespace, "printer") == "Succeeded", 120, "the job Succeeded")
        pod = tfgang.kubectl_json("-n", namespace, "get", "pod", "printer-worker-0")
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "printer"
        log = tfgang.run(["kubectl", "-n", namespace, "logs", "printer-worker-0"]).stdout
        assert '"task":{"type":"worker","index":0}' in log, log
        assert f'"printer-worker-0.{namespace}.svc:2222"' in log, log
    finally:
        tfgang.run(["kubectl", "delete", "namespace", namespace, "--wait=false"], check=False)


def test_the_controller_runs_in_cluster_under_the_charts_service_account(tfgang: Release) -> None:
    pods = pods_of(tfgang, "controller")
    assert len(pods) == 2
    for pod in pods:
        spec = pod["spec"]
        assert spec["serviceAccountName"] == CONTROLLER
        (container,) = spec["containers"]
        words = [*container.get("command", ()), *container.get("args", ())]
        assert not any("kubeconfig" in word for word in words), words
        assert "TFGANG_KUBECONFIG" not in {variable["name"] for variable in container.get("env") or ()}
        mounts = {mount["mountPath"] for mount in container.get("volumeMounts") or ()}
        assert "/var/run/secrets/kubernetes.io/serviceaccount" in mounts
        assert pod["status"]["phase"] == "Running"
    # The Lease is written by one of them, with the token of the ServiceAccount mounted there.
    lease = tfgang.kubectl_json("-n", NAMESPACE, "get", "lease", LEASE)
    holder = str(lease["spec"].get("holderIdentity") or "")
    assert any(holder.startswith(pod["metadata"]["name"]) for pod in pods), holder
    renewed = datetime.datetime.fromisoformat(lease["spec"]["renewTime"].replace("Z", "+00:00"))
    assert datetime.datetime.now(datetime.UTC) - renewed < datetime.timedelta(seconds=30)


def test_each_component_calls_the_api_as_its_service_account_and_is_never_refused(
    tfgang: Release, one_node: OneNode
) -> None:
    # kube-apiserver's audit log: who made each call, and its answer.
    records = one_node.apiserver.request_log()
    for component, writes in ((CONTROLLER, {"leases", "events"}), (WEBHOOK, {"secrets"})):
        user = f"system:serviceaccount:{NAMESPACE}:{component}"
        theirs = [record for record in records if record.user == user]
        written = {r.resource for r in theirs if r.verb in ("create", "update", "patch") and r.code < 300}
        assert writes & written, f"{user} wrote none of {sorted(writes)}: {sorted(written)}"
        refused = sorted({(r.verb, r.resource, r.namespace, r.code) for r in theirs if r.code in (401, 403)})
        assert refused == [], f"{user} was refused: {refused}"


def test_the_certificate_secret_is_served_and_a_rotation_is_reloaded_without_a_restart(
    tfgang: Release,
) -> None:
    secret = _secret(tfgang)
    current = _serving_pem(secret)
    for pod in pods_of(tfgang, "webhook"):
        name = pod["metadata"]["name"]
        assert same_certificate(file_in(tfgang, name, CERT_FILE), current), name
        assert same_certificate(served_certificate(tfgang, name, WEBHOOK_PORT), current), name

    # Rounds every 2 s instead of the chart's 600 s, so that the renewal comes within the test.
    tfgang.upgrade("--set", "certs.selfManaged.checkIntervalSeconds=2")
    tfgang.wait_rolled_out()
    before = {pod["metadata"]["uid"]: restart_counts(pod) for pod in pods_of(tfgang, "webhook")}
    ca_before = _secret(tfgang)["data"]["ca.crt"]

    # Issued 40 days ago for 41: due for renewal, as time would make it.
    due = _replace_serving_certificate(tfgang, days_ago=40, valid_days=41)

    def renewed_everywhere() -> str | None:
        serving = _serving_pem(_secret(tfgang))
        if same_certificate(serving, due):
            return None
        for pod in pods_of(tfgang, "webhook"):
            name = pod["metadata"]["name"]
            if not same_certificate(file_in(tfgang, name, CERT_FILE), serving):
                return None
            if not same_certificate(served_certificate(tfgang, name, WEBHOOK_PORT), serving):
                return None
        return serving

    until(renewed_everywhere, 60, "the renewed certificate in the Secret, each pod's file and served")
    after = {pod["metadata"]["uid"]: restart_counts(pod) for pod in pods_of(tfgang, "webhook")}
    assert after == before, "a webhook pod was replaced or restarted to serve the renewed certificate"
    assert _secret(tfgang)["data"]["ca.crt"] == ca_before, "the renewal replaced the CA"


def test_a_mounted_secret_its_owner_renews_is_reloaded_without_a_restart(tfgang: Release) -> None:
    """``certs.mode=secret``: the kubelet mounts the Secret and, once its owner (cert-manager, say)
    writes a new certificate, swaps the mounted files; each replica serves it without a restart.
    The release goes back to selfManaged afterwards, keeping the same Secret and CA."""
    ca_bundle = _secret(tfgang)["data"]["ca.crt"]
    tfgang.upgrade(
        "--set", "certs.mode=secret", "--set", f"certs.secretName={CERT_SECRET}",
        "--set", f"certs.caBundle={ca_bundle}",
    )  # fmt: skip
    try:
        tfgang.wait_rolled_out()
        pods = pods_of(tfgang, "webhook")
        mounted = {volume["name"]: volume for volume in pods[0]["spec"]["volumes"]}["certs"]
        assert mounted["secret"]["secretName"] == CERT_SECRET
        before = {pod["metadata"]["uid"]: restart_counts(pod) for pod in pods}

        renewed = _replace_serving_certificate(tfgang)

        def swapped_everywhere() -> bool:
            for pod in pods_of(tfgang, "webhook"):
                name = pod["metadata"]["name"]
                if not same_certificate(file_in(tfgang, name, CERT_FILE), renewed):
                    return False
                if not same_certificate(served_certificate(tfgang, name, WEBHOOK_PORT), renewed):
                    return False
            return True

        # The kubelet refreshes a mounted Secret on its periodic pod sync (a minute by default).
        until(
            swapped_everywhere, 150, "the renewed certificate mounted by the kubelet and served by each pod"
        )
        after = {pod["metadata"]["uid"]: restart_counts(pod) for pod in pods_of(tfgang, "webhook")}
        assert after == before, "a webhook pod was replaced or restarted to serve the mounted certificate"
    finally:
        tfgang.upgrade(
            "--set", "certs.mode=selfManaged", "--set", "certs.secretName=", "--set", "certs.caBundle="
        )
        tfgang.wait_rolled_out()


def _replace_serving_certificate(release: Release, *, days_ago: int = 0, valid_days: int = 365) -> str:
    """Write a new serving certificate of the Secret's own CA into the Secret, issued ``days_ago``
    for ``valid_days``, as its owner would; its PEM."""
    secret = _secret(release)
    stored = decode_secret_data(secret["data"])
    assert stored.ca is not None, "a self-managed Secret keeps its CA's key"
    issued = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=days_ago)
    due = issue_serving_certificate(
        stored.ca, dns_names_of(stored.serving.cert_pem), valid_days=valid_days, now=issued
    )
    due = type(due)(due.cert_pem, due.key_pem, stored.serving.ca_pem, due.not_after)
    secret["data"] = {**secret["data"], **encode_secret_data(due, stored.ca)}
    for key in ("resourceVersion", "managedFields"):
        secret["metadata"].pop(key, None)
    release.run(["kubectl", "replace", "-f", "-"], input_text=json.dumps(secret))
    return due.cert_pem.decode()
