"""The whole webhook process (``webhook.__main__.serve``) in self-managed mode on the sandbox API server.

It creates the certificate Secret, injects caBundle into its webhook configurations, and the API
server then really calls it over TLS (verifying the injected CA for ``svc.ns.svc``): TFJobs are
validated and TFJob pods come back mutated. Also covers renewal and the TFJob cache's watch.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import datetime
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.x509 import verification

from certs.authority import new_ca
from certs.files import read_cert_dir
from certs.keeper import CertificateKeeper, KeeperSettings
from certs.pem import certificate_pem, load_certificate, load_certificates
from certs.secret import decode_secret_data, encode_secret_data
from certs.serving import issue_serving_certificate
from kube.api import KubeApi
from kube.client import make_api_client
from kube.errors import ApiError
from kube.resources import (
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    PODS,
    SECRETS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
)
from realcluster.ports import free_port
from sandbox import testing
from tests.polling import eventually
from tests.webhook.admission_cases import load_cases
from webhook.__main__ import serve
from webhook.cache import TFJOBS, TFJobCache
from webhook.config import parse_config

NAMESPACE = "tfgang-system"
SERVICE = "tfgang-webhook"
SECRET = "tfgang-webhook-certs"
SEED = load_cases("mutate-seed-ps-0")[0]
SEED_TF_CONFIG = SEED.expected["patch"][0]["value"][0]["value"]


def _configurations() -> tuple[dict[str, Any], dict[str, Any]]:
    def webhook(name: str, path: str, rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "name": name,
            "clientConfig": {"service": {"name": SERVICE, "namespace": NAMESPACE, "path": path, "port": 443}},
            "rules": rules,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1", "v1beta1"],
            "failurePolicy": "Fail",
            "timeoutSeconds": 5,
            **extra,
        }

    mutating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "tfgang-webhook"},
        "webhooks": [
            webhook(
                "mutate-pods.tfgang.kubeflow.org",
                "/mutate-pods",
                [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
                objectSelector={
                    "matchExpressions": [{"key": "training.kubeflow.org/job-name", "operator": "Exists"}]
                },
                reinvocationPolicy="IfNeeded",
            )
        ],
    }
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "tfgang-webhook"},
        "webhooks": [
            webhook(
                "validate-tfjobs.tfgang.kubeflow.org",
                "/validate-tfjobs",
                [
                    {
                        "operations": ["CREATE", "UPDATE"],
                        "apiGroups": ["kubeflow.org"],
                        "apiVersions": ["v1"],
                        "resources": ["tfjobs"],
                    }
                ],
            )
        ],
    }
    return mutating, validating


@pytest.fixture
def sandbox() -> Any:
    with testing.start_apiserver() as handle:
        yield handle


@contextlib.asynccontextmanager
async def _kube(sandbox: Any) -> AsyncIterator[KubeApi]:
    api = KubeApi(await make_api_client(sandbox.kubeconfig))
    try:
        yield api
    finally:
        await api.close()


async def test_self_managed_webhook_serves_the_sandbox(sandbox: Any, tmp_path: Path) -> None:
    port, ops_port = free_port(), free_port()
    sandbox.route_service(NAMESPACE, SERVICE, port)
    async with _kube(sandbox) as api:
        await api.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
        mutating, validating = _configurations()
        await api.create(MUTATING_WEBHOOK_CONFIGURATIONS, mutating)
        await api.create(VALIDATING_WEBHOOK_CONFIGURATIONS, validating)

        config = parse_config(
            [
                "--kubeconfig",
                sandbox.kubeconfig,
                "--cert-dir",
                str(tmp_path / "certs"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--ops-port",
                str(ops_port),
                "--cert-secret",
                SECRET,
                "--cert-secret-namespace",
                NAMESPACE,
                "--service-name",
                SERVICE,
                "--mutating-webhook-configuration",
                "tfgang-webhook",
                "--validating-webhook-configuration",
                "tfgang-webhook",
                "--cert-poll-interval",
                "0.1",
            ],
            environ={},
        )
        stop = asyncio.Event()
        webhook = asyncio.create_task(serve(config, stop))
        try:
            async with aiohttp.ClientSession() as session:

                async def ready() -> bool:
                    try:
                        async with session.get(f"http://127.0.0.1:{ops_port}/readyz") as response:
                            return response.status == 200
                    except aiohttp.ClientError:
                        return False

                await eventually(ready)

                # The Secret exists and its CA is what both configurations now trust.
                secret = await api.get(SECRETS, SECRET, NAMESPACE)
                stored = decode_secret_data(secret["data"])
                bundle = base64.b64encode(stored.serving.ca_pem).decode()
                for resource in (MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS):
                    configuration = await api.get(resource, "tfgang-webhook")
                    assert configuration["webhooks"][0]["clientConfig"]["caBundle"] == bundle
                assert read_cert_dir(tmp_path / "certs") == stored.serving

                # The API server calls the validating webhook over TLS with that CA.
                invalid = copy.deepcopy(SEED.tfjobs[0])
                for key in ("uid", "resourceVersion", "generation", "creationTimestamp"):
                    invalid["metadata"].pop(key)
                job = copy.deepcopy(invalid)
                invalid["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["name"] = (
                    "trainer"
                )
                with pytest.raises(ApiError) as denial:
                    await api.create(TFJOBS, invalid, "default")
                assert "must have at least one container with name tensorflow" in str(denial.value)

                # ... and the mutating webhook on the seed's PS pod.
                stored = await api.create(TFJOBS, job, "default")
                pod = copy.deepcopy(SEED.review["request"]["object"])
                # Only the TFJob's own pods are mutated: the owner is the job just created.
                pod["metadata"]["ownerReferences"][0]["uid"] = stored["metadata"]["uid"]
                pod["spec"].pop("volumes")
                pod["spec"]["containers"][0].pop("volumeMounts")
                created = await api.create(PODS, pod, "default")
                assert created["spec"]["containers"][0]["env"] == [
                    {"name": "TF_CONFIG", "value": SEED_TF_CONFIG}
                ]
                assert created["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "tftest"
                assert created["metadata"]["annotations"]["volcano.sh/task-spec"] == "ps"
                assert created["spec"]["schedulerName"] == "volcano"

                async with session.get(f"http://127.0.0.1:{ops_port}/metrics") as response:
                    metrics = await response.text()
                assert 'tfgang_webhook_requests_total{path="/mutate-pods",result="allowed"} 1.0' in metrics
                assert 'path="/validate-tfjobs",reason="invalid"' in metrics
                assert "tfgang_webhook_certificate_expiry_timestamp_seconds 1." in metrics
        finally:
            stop.set()
            await asyncio.wait_for(webhook, 10)


async def test_keeper_renews_under_the_same_ca_and_adopts_an_existing_secret(sandbox: Any) -> None:
    settings = KeeperSettings(secret_name=SECRET, namespace="default", service=SERVICE)
    now = datetime.datetime.now(datetime.UTC)
    async with _kube(sandbox) as api:
        keeper = CertificateKeeper(api, settings)
        first, written = await keeper.ensure_secret(now)
        assert written
        again, written = await CertificateKeeper(api, settings).ensure_secret(now)
        assert not written and again == first
        later = now + datetime.timedelta(days=340)
        renewed, written = await keeper.ensure_secret(later)
        assert written
        assert renewed.serving.cert_pem != first.serving.cert_pem
        assert renewed.serving.ca_pem == first.serving.ca_pem  # caBundle unchanged by a leaf renewal
        secret = await api.get(SECRETS, SECRET, "default")
        assert decode_secret_data(secret["data"]) == renewed
        injected, missing = await keeper.inject_ca_bundle(renewed.serving.ca_pem)
        assert (injected, missing) == (0, [])
        absent = CertificateKeeper(
            api,
            KeeperSettings(
                secret_name=SECRET,
                namespace="default",
                service=SERVICE,
                mutating_webhook_configurations=("not-created-yet",),
            ),
        )
        result = await absent.reconcile(later)
        assert result.missing_configurations == ("not-created-yet",) and not result.secret_written


async def test_tfjob_cache_follows_the_watch_and_falls_back_to_get(sandbox: Any) -> None:
    job = copy.deepcopy(SEED.tfjobs[0])
    for key in ("uid", "resourceVersion", "generation", "creationTimestamp"):
        job["metadata"].pop(key)
    async with _kube(sandbox) as api:
        cache = TFJobCache(api)
        assert await cache.get("default", "tftest") is None  # a GET on the miss: 404
        await api.create(TFJOBS, job, "default")
        fetched = await cache.get("default", "tftest")  # not watched yet: GET again
        assert fetched is not None and cache.misses == 2
        assert "image" not in json.dumps(fetched)  # only the admission view is kept
        runner = asyncio.create_task(cache.run())
        try:
            await asyncio.wait_for(cache.wait_synced(), 10)
            assert "default/tftest" in cache.store
            await cache.get("default", "tftest")
            assert cache.misses == 2
            await api.delete(TFJOBS, "tftest", "default")

            async def gone() -> bool:
                return "default/tftest" not in cache.store

            await eventually(gone)
        finally:
            runner.cancel()


async def test_keeper_replaces_unusable_foreign_and_ageing_secrets(sandbox: Any) -> None:
    now = datetime.datetime.now(datetime.UTC)
    old_ca = new_ca("old-ca", valid_days=3650, now=now - datetime.timedelta(days=3400))  # due: < 1 year left
    foreign_ca = new_ca("cert-manager-ca", valid_days=90, now=now)
    cases = {
        "garbage": {"tls.crt": base64.b64encode(b"not a certificate").decode(), "tls.key": "", "ca.crt": ""},
        # cert-manager style: no ca.key, so this webhook cannot renew under that CA.
        "foreign": encode_secret_data(issue_serving_certificate(foreign_ca, ["x"], now=now)),
        "ageing-ca": encode_secret_data(issue_serving_certificate(old_ca, ["x"], now=now), old_ca),
    }
    async with _kube(sandbox) as api:
        for name, data in cases.items():
            await api.create(
                SECRETS,
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": name, "namespace": "default"},
                    "data": data,
                },
            )
            keeper = CertificateKeeper(
                api, KeeperSettings(secret_name=name, namespace="default", service=SERVICE)
            )
            stored, written = await keeper.ensure_secret(now)
            assert written, name
            assert stored.ca is not None and stored.ca.cert_pem not in (old_ca.cert_pem, foreign_ca.cert_pem)
            bundle = load_certificates(stored.serving.ca_pem)
            expected_tail = {"garbage": [], "foreign": [foreign_ca.cert_pem], "ageing-ca": [old_ca.cert_pem]}[
                name
            ]
            # The new CA first, then the previous CAs still valid, so both old and new leaves verify.
            assert [certificate_pem(c) for c in bundle] == [stored.ca.cert_pem, *expected_tail], name
            store = verification.Store(bundle)
            verifier = (
                verification.PolicyBuilder()
                .store(store)
                .build_server_verifier(x509.DNSName(f"{SERVICE}.default.svc"))
            )
            verifier.verify(load_certificate(stored.serving.cert_pem), [])
            secret = await api.get(SECRETS, name, "default")
            assert decode_secret_data(secret["data"]) == stored

        # A leaf renewed soon after a CA rotation (here: a new DNS name) keeps the old CA trusted.
        wider = KeeperSettings(
            secret_name="ageing-ca",
            namespace="default",
            service=SERVICE,
            extra_dns_names=("webhook.example",),
        )
        renewed, written = await CertificateKeeper(api, wider).ensure_secret(now)
        assert written and stored.ca is not None and renewed.ca == stored.ca
        assert [certificate_pem(c) for c in load_certificates(renewed.serving.ca_pem)] == [
            stored.ca.cert_pem,
            old_ca.cert_pem,
        ]
