"""Admission webhooks registered through the API are called over TLS like kube-apiserver calls them."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import ssl
import tempfile
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from certs.authority import new_ca
from certs.serving import issue_serving_certificate
from sandbox.testing import ApiServerHandle
from tests.sandbox.apiserver.conftest import Kubectl

Review = dict[str, Any]
Answer = Callable[[Review], Awaitable[dict[str, Any]]]


@dataclass
class Webhook:
    port: int
    ca_pem: bytes
    reviews: list[Review] = field(default_factory=list)
    answers: dict[str, Answer] = field(default_factory=dict)

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca_pem).decode()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"


def allow(patch: list[dict[str, Any]] | None = None, warnings: list[str] | None = None) -> Answer:
    async def answer(review: Review) -> dict[str, Any]:
        response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": True}
        if patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        if warnings:
            response["warnings"] = warnings
        return response

    return answer


def deny(message: str) -> Answer:
    async def answer(review: Review) -> dict[str, Any]:
        return {
            "uid": review["request"]["uid"],
            "allowed": False,
            "status": {"code": 403, "message": message},
        }

    return answer


def slow(seconds: float) -> Answer:
    async def answer(review: Review) -> dict[str, Any]:
        await asyncio.sleep(seconds)
        return {"uid": review["request"]["uid"], "allowed": True}

    return answer


@contextlib.contextmanager
def running_webhook() -> Iterator[Webhook]:
    authority = new_ca("webhook-test-ca")
    leaf = issue_serving_certificate(
        authority, ["localhost", "tfgang-webhook.tfgang-system.svc"], ip_addresses=["127.0.0.1"]
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    hook = Webhook(port, authority.cert_pem)

    async def serve(request: web.Request) -> web.Response:
        review = await request.json()
        hook.reviews.append(review)
        answer = hook.answers.get(request.path, allow())
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": await answer(review)}
        )

    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_post("/{tail:.*}", serve)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    with tempfile.TemporaryDirectory() as directory:
        Path(directory, "tls.crt").write_bytes(leaf.cert_pem)
        Path(directory, "tls.key").write_bytes(leaf.key_pem)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(Path(directory, "tls.crt")), str(Path(directory, "tls.key")))

    async def start() -> None:
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    try:
        yield hook
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def mutating_configuration(name: str, hooks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": hooks,
    }


def pod_hook(name: str, url: str, ca_bundle: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "rules": [
            {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **extra,
    }


def pod(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "tensorflow", "image": "busybox:1.37.0-glibc"}]},
    }


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    with running_webhook() as hook:
        yield hook


async def kubectl_create(kubectl: Kubectl, obj: dict[str, Any]) -> tuple[asyncio.subprocess.Process, bytes]:
    """``kubectl create -f -`` without blocking the loop the in-process webhook answers on."""
    process = await asyncio.create_subprocess_exec(
        *kubectl.command("create", "-f", "-"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await process.communicate(json.dumps(obj).encode())
    return process, err


async def test_mutating_webhook_patches_matching_pods_only(api_client: ApiClient, webhook: Webhook) -> None:
    admission = client.AdmissionregistrationV1Api(api_client)
    core = client.CoreV1Api(api_client)
    webhook.answers["/mutate"] = allow(
        [{"op": "add", "path": "/metadata/annotations", "value": {"mutated": "yes"}}]
    )
    await admission.create_mutating_webhook_configuration(
        mutating_configuration(
            "by-label",
            [
                pod_hook(
                    "label.example.com",
                    webhook.url("/mutate"),
                    webhook.ca_bundle,
                    objectSelector={"matchLabels": {"training.kubeflow.org/job-name": "tftest"}},
                )
            ],
        )
    )
    try:
        matched = await core.create_namespaced_pod(
            "default", pod("hooked", {"training.kubeflow.org/job-name": "tftest"})
        )
        unmatched = await core.create_namespaced_pod("default", pod("plain"))
        assert matched.metadata.annotations == {"mutated": "yes"}
        assert unmatched.metadata.annotations is None
        assert len(webhook.reviews) == 1
        request = webhook.reviews[0]["request"]
        assert request["operation"] == "CREATE"
        assert request["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
        assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
        assert request["requestKind"] == request["kind"]
        assert request["name"] == "hooked" and request["namespace"] == "default"
        assert request["userInfo"]["username"] == "sandbox-admin"
        assert request["object"]["spec"]["schedulerName"] == "default-scheduler", (
            "defaults come before admission"
        )
        assert request["oldObject"] is None and request["dryRun"] is False
        assert request["options"]["kind"] == "CreateOptions"
    finally:
        await admission.delete_mutating_webhook_configuration("by-label")
        await core.delete_collection_namespaced_pod("default")


async def test_namespace_selector_picks_namespaces_by_label(api_client: ApiClient, webhook: Webhook) -> None:
    admission = client.AdmissionregistrationV1Api(api_client)
    core = client.CoreV1Api(api_client)
    await core.create_namespace({"metadata": {"name": "team-a", "labels": {"team": "a"}}})
    await core.create_namespace({"metadata": {"name": "team-b", "labels": {"team": "b"}}})
    await admission.create_mutating_webhook_configuration(
        mutating_configuration(
            "by-namespace",
            [
                pod_hook(
                    "ns.example.com",
                    webhook.url("/ns"),
                    webhook.ca_bundle,
                    namespaceSelector={
                        "matchExpressions": [{"key": "team", "operator": "In", "values": ["a"]}]
                    },
                )
            ],
        )
    )
    try:
        await core.create_namespaced_pod("team-a", pod("one"))
        await core.create_namespaced_pod("team-b", pod("two"))
        assert [r["request"]["namespace"] for r in webhook.reviews] == ["team-a"]
    finally:
        await admission.delete_mutating_webhook_configuration("by-namespace")


async def test_denial_reaches_kubectl_in_kube_apiserver_wording(
    api_client: ApiClient, webhook: Webhook, kubectl: Kubectl
) -> None:
    admission = client.AdmissionregistrationV1Api(api_client)
    webhook.answers["/deny"] = deny("TFJob pods must not set TF_CONFIG")
    await admission.create_mutating_webhook_configuration(
        mutating_configuration(
            "denier", [pod_hook("deny.example.com", webhook.url("/deny"), webhook.ca_bundle)]
        )
    )
    try:
        process, err = await kubectl_create(kubectl, pod("denied"))
        assert process.returncode != 0
        assert err.decode().strip() == (
            'Error from server: error when creating "STDIN": admission webhook "deny.example.com" denied the '
            "request: TFJob pods must not set TF_CONFIG"
        )
    finally:
        await admission.delete_mutating_webhook_configuration("denier")


async def test_warnings_come_back_as_warning_headers(
    api_client: ApiClient, webhook: Webhook, kubectl: Kubectl
) -> None:
    admission = client.AdmissionregistrationV1Api(api_client)
    webhook.answers["/warn"] = allow(warnings=["TF_CONFIG kept as the user set it"])
    await admission.create_mutating_webhook_configuration(
        mutating_configuration(
            "warner", [pod_hook("warn.example.com", webhook.url("/warn"), webhook.ca_bundle)]
        )
    )
    try:
        process, err = await kubectl_create(kubectl, pod("warned"))
        assert process.returncode == 0, err
        assert "Warning: TF_CONFIG kept as the user set it" in err.decode()
    finally:
        await admission.delete_mutating_webhook_configuration("warner")
        await client.CoreV1Api(api_client).delete_namespaced_pod("warned", "default")


@pytest.mark.parametrize("policy", ["Ignore", "Fail"])
async def test_failure_policy_when_the_webhook_is_down(api_client: ApiClient, policy: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    admission = client.AdmissionregistrationV1Api(api_client)
    core = client.CoreV1Api(api_client)
    url = f"https://127.0.0.1:{closed_port}/mutate"
    await admission.create_mutating_webhook_configuration(
        mutating_configuration("down", [pod_hook("down.example.com", url, "", failurePolicy=policy)])
    )
    try:
        if policy == "Ignore":
            created = await core.create_namespaced_pod("default", pod("ignored"))
            assert created.metadata.name == "ignored"
            await core.delete_namespaced_pod("ignored", "default")
        else:
            with pytest.raises(ApiException) as failed:
                await core.create_namespaced_pod("default", pod("failed"))
            assert failed.value.status == 500
            status = json.loads(failed.value.body)
            assert status["reason"] == "InternalError"
            assert status["message"] == (
                'Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: '
                f'Post "{url}?timeout=10s": dial tcp 127.0.0.1:{closed_port}: connect: connection refused'
            )
    finally:
        await admission.delete_mutating_webhook_configuration("down")


@pytest.mark.parametrize("policy", ["Ignore", "Fail"])
async def test_failure_policy_when_the_webhook_is_slow(
    api_client: ApiClient, webhook: Webhook, policy: str
) -> None:
    admission = client.AdmissionregistrationV1Api(api_client)
    core = client.CoreV1Api(api_client)
    webhook.answers["/slow"] = slow(3)
    await admission.create_mutating_webhook_configuration(
        mutating_configuration(
            "slow",
            [
                pod_hook(
                    "slow.example.com",
                    webhook.url("/slow"),
                    webhook.ca_bundle,
                    failurePolicy=policy,
                    timeoutSeconds=1,
                )
            ],
        )
    )
    try:
        if policy == "Ignore":
            created = await core.create_namespaced_pod("default", pod("slow-ignored"))
            assert created.metadata.name == "slow-ignored"
            await core.delete_namespaced_pod("slow-ignored", "default")
        else:
            with pytest.raises(ApiException) as failed:
                await core.create_namespaced_pod("default", pod("slow-failed"))
            assert failed.value.status == 500
            assert json.loads(failed.value.body)["message"] == (
                'Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: '
                f'Post "{webhook.url("/slow")}?timeout=1s": context deadline exceeded'
            )
    finally:
        await admission.delete_mutating_webhook_configuration("slow")


async def test_untrusted_certificate_fails_the_call(api_client: ApiClient, webhook: Webhook) -> None:
    admission = client.AdmissionregistrationV1Api(api_client)
    core = client.CoreV1Api(api_client)
    other_ca = base64.b64encode(new_ca("someone-else").cert_pem).decode()
    await admission.create_mutating_webhook_configuration(
        mutating_configuration("untrusted", [pod_hook("untrusted.example.com", webhook.url("/x"), other_ca)])
    )
    try:
        with pytest.raises(ApiException) as failed:
            await core.create_namespaced_pod("default", pod("untrusted"))
        assert "tls: failed to verify certificate" in json.loads(failed.value.body)["message"]
        assert webhook.reviews == []
    finally:
        await admission.delete_mutating_webhook_configuration("untrusted")


async def test_service_reference_dry_run_and_side_effects(
    api: ApiServerHandle, api_client: ApiClient, webhook: Webhook
) -> None:
    admission = client.AdmissionregistrationV1Api(api_client)
    core = client.CoreV1Api(api_client)
    api.route_service("tfgang-system", "tfgang-webhook", webhook.port)
    hook = pod_hook("svc.example.com", "", webhook.ca_bundle, sideEffects="Some")
    hook["clientConfig"] = {
        "service": {"namespace": "tfgang-system", "name": "tfgang-webhook", "path": "/svc"},
        "caBundle": webhook.ca_bundle,
    }
    with pytest.raises(ApiException) as invalid:
        await admission.create_mutating_webhook_configuration(mutating_configuration("svc", [hook]))
    assert invalid.value.status == 422
    hook["sideEffects"] = "None"
    await admission.create_mutating_webhook_configuration(mutating_configuration("svc", [hook]))
    try:
        created = await core.create_namespaced_pod("default", pod("via-service"), dry_run="All")
        assert created.metadata.name == "via-service"
        request = webhook.reviews[-1]["request"]
        assert request["dryRun"] is True
        assert request["options"]["dryRun"] == ["All"]
        with pytest.raises(ApiException) as missing:
            await core.read_namespaced_pod("via-service", "default")
        assert missing.value.status == 404
    finally:
        await admission.delete_mutating_webhook_configuration("svc")


async def test_reinvocation_if_needed_after_a_later_mutation(api_client: ApiClient, webhook: Webhook) -> None:
    admission = client.AdmissionregistrationV1Api(api_client)
    core = client.CoreV1Api(api_client)
    webhook.answers["/second"] = allow(
        [{"op": "add", "path": "/metadata/annotations", "value": {"second": "1"}}]
    )
    await admission.create_mutating_webhook_configuration(
        mutating_configuration(
            "a-first",
            [
                pod_hook(
                    "first.example.com",
                    webhook.url("/first"),
                    webhook.ca_bundle,
                    reinvocationPolicy="IfNeeded",
                )
            ],
        )
    )
    await admission.create_mutating_webhook_configuration(
        mutating_configuration(
            "b-second", [pod_hook("second.example.com", webhook.url("/second"), webhook.ca_bundle)]
        )
    )
    try:
        created = await core.create_namespaced_pod("default", pod("reinvoked"))
        assert created.metadata.annotations == {"second": "1"}
        calls = [(r["request"]["object"]["metadata"].get("annotations") or {}) for r in webhook.reviews]
        assert calls == [{}, {}, {"second": "1"}], "first, second, then first again on the mutated pod"
    finally:
        await admission.delete_mutating_webhook_configuration("a-first")
        await admission.delete_mutating_webhook_configuration("b-second")
        await core.delete_namespaced_pod("reinvoked", "default")


async def test_validating_webhooks_see_the_mutated_object(api_client: ApiClient, webhook: Webhook) -> None:
    admission = client.AdmissionregistrationV1Api(api_client)
    core = client.CoreV1Api(api_client)
    webhook.answers["/mutate"] = allow(
        [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]
    )
    webhook.answers["/validate"] = deny("labelled pods are refused")
    await admission.create_mutating_webhook_configuration(
        mutating_configuration("m", [pod_hook("m.example.com", webhook.url("/mutate"), webhook.ca_bundle)])
    )
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "v"},
        "webhooks": [
            pod_hook(
                "v.example.com",
                webhook.url("/validate"),
                webhook.ca_bundle,
                objectSelector={"matchLabels": {"mutated": "yes"}},
            )
        ],
    }
    await admission.create_validating_webhook_configuration(validating)
    try:
        with pytest.raises(ApiException) as denied:
            await core.create_namespaced_pod("default", pod("validated"))
        assert denied.value.status == 403
        assert json.loads(denied.value.body)["message"] == (
            'admission webhook "v.example.com" denied the request: labelled pods are refused'
        )
    finally:
        await admission.delete_mutating_webhook_configuration("m")
        await admission.delete_validating_webhook_configuration("v")


async def test_containers_added_by_a_webhook_are_defaulted(api_client: ApiClient, webhook: Webhook) -> None:
    admission = client.AdmissionregistrationV1Api(api_client)
    core = client.CoreV1Api(api_client)
    sidecar = {"name": "sidecar", "image": "busybox:latest"}
    webhook.answers["/sidecar"] = allow([{"op": "add", "path": "/spec/containers/-", "value": sidecar}])
    await admission.create_mutating_webhook_configuration(
        mutating_configuration(
            "sidecar", [pod_hook("sidecar.example.com", webhook.url("/sidecar"), webhook.ca_bundle)]
        )
    )
    try:
        created = await core.create_namespaced_pod("default", pod("with-sidecar"))
        added = created.spec.containers[1]
        assert added.name == "sidecar"
        assert (
            added.image_pull_policy == "Always" and added.termination_message_path == "/dev/termination-log"
        )
    finally:
        await admission.delete_mutating_webhook_configuration("sidecar")
        await core.delete_namespaced_pod("with-sidecar", "default")
