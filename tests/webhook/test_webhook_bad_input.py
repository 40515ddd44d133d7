"""Bad input over real HTTPS: a 4xx with a message, never a 5xx and never a dropped connection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from certs.authority import CertificateAuthority
from tests.webhook.admission_cases import load_cases
from tests.webhook.webhook_harness import client_context, make_cert_dir, running_webhook


@pytest.fixture
def ca(tmp_path: Path) -> CertificateAuthority:
    return make_cert_dir(tmp_path)


async def _send(
    ca: CertificateAuthority,
    tmp_path: Path,
    path: str,
    body: bytes,
    *,
    content_type: str = "application/json",
    method: str = "POST",
    max_body_bytes: int = 4 * 1024 * 1024,
) -> tuple[int, dict[str, Any]]:
    async with (
        running_webhook(tmp_path, max_body_bytes=max_body_bytes) as webhook,
        aiohttp.ClientSession() as session,
        session.request(
            method,
            webhook.url + path,
            data=body,
            headers={"Content-Type": content_type},
            ssl=client_context(ca),
        ) as response,
    ):
        text = await response.text()
        return response.status, (
            json.loads(text) if response.content_type == "application/json" else {"text": text}
        )


@pytest.mark.parametrize("path", ["/mutate-pods", "/validate-tfjobs"])
@pytest.mark.parametrize(
    ("body", "content_type", "status", "message"),
    [
        (b"{}", "text/plain", 415, "expected Content-Type application/json, got text/plain"),
        (b"not json", "application/json", 400, "the body is not valid JSON"),
        (b"\xff\xfe", "application/json", 400, "the body is not valid JSON"),
        (b"", "application/json", 400, "the body is not valid JSON"),
        (b"[1, 2]", "application/json", 400, "the body is not a JSON object"),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}',
            "application/json",
            400,
            "the AdmissionReview has no request",
        ),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}',
            "application/json",
            400,
            "the AdmissionReview's request has no uid",
        ),
        (
            b'{"apiVersion": "v1", "kind": "AdmissionReview", "request": {"uid": "x"}}',
            "application/json",
            400,
            "unsupported AdmissionReview apiVersion",
        ),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "Pod", "request": {"uid": "x"}}',
            "application/json",
            400,
            'unsupported kind "Pod"',
        ),
        (b"[" * 100_000, "application/json", 400, "the body is not valid JSON"),
    ],
)
async def test_malformed_bodies_get_a_4xx_with_a_message(
    ca: CertificateAuthority,
    tmp_path: Path,
    path: str,
    body: bytes,
    content_type: str,
    status: int,
    message: str,
) -> None:
    code, answer = await _send(ca, tmp_path, path, body, content_type=content_type)
    assert code == status
    assert answer["kind"] == "Status" and answer["code"] == status
    assert answer["message"].startswith(message)


async def test_a_bare_admission_request_without_envelope_is_a_400(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    bare = load_cases("mutate-seed-ps-0")[0].review["request"]
    code, answer = await _send(ca, tmp_path, "/mutate-pods", json.dumps(bare).encode())
    assert code == 400 and "unsupported AdmissionReview apiVersion" in answer["message"]


async def test_a_body_over_the_limit_gets_413(ca: CertificateAuthority, tmp_path: Path) -> None:
    review = load_cases("mutate-seed-ps-0")[0].review
    review["request"]["object"]["metadata"]["annotations"] = {"big": "x" * 20_000}
    code, answer = await _send(
        ca, tmp_path, "/mutate-pods", json.dumps(review).encode(), max_body_bytes=16_384
    )
    assert code == 413 and answer["reason"] == "RequestEntityTooLarge"


async def test_a_large_review_under_the_default_limit_is_answered(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    case = load_cases("mutate-seed-ps-0")[0]
    review = case.review
    # A 2 MiB pod, more than aiohttp's 1 MiB default limit.
    review["request"]["object"]["metadata"]["annotations"] = {"big": "x" * (2 * 1024 * 1024)}
    async with (
        running_webhook(tmp_path, case.tfjobs) as webhook,
        aiohttp.ClientSession() as session,
        session.post(webhook.url + "/mutate-pods", json=review, ssl=client_context(ca)) as response,
    ):
        assert response.status == 200
        assert (await response.json())["response"]["allowed"] is True


@pytest.mark.parametrize(
    ("method", "path", "status"), [("GET", "/mutate-pods", 405), ("POST", "/nowhere", 404)]
)
async def test_wrong_method_or_path(
    ca: CertificateAuthority, tmp_path: Path, method: str, path: str, status: int
) -> None:
    code, _ = await _send(ca, tmp_path, path, b"{}", method=method)
    assert code == status


async def test_a_pod_review_at_the_tfjob_endpoint_is_allowed_unjudged(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    review = load_cases("mutate-seed-ps-0")[0].review
    code, answer = await _send(ca, tmp_path, "/validate-tfjobs", json.dumps(review).encode())
    assert code == 200
    assert answer["response"] == {"uid": review["request"]["uid"], "allowed": True}


async def test_keep_alive_connection_survives_bad_requests(ca: CertificateAuthority, tmp_path: Path) -> None:
    case = load_cases("mutate-seed-ps-0")[0]
    connector = aiohttp.TCPConnector(limit=1, ssl=client_context(ca))
    async with (
        running_webhook(tmp_path, case.tfjobs) as webhook,
        aiohttp.ClientSession(connector=connector) as session,
    ):
        for body in (b"garbage", json.dumps(case.review).encode(), b"{}", json.dumps(case.review).encode()):
            async with session.post(
                webhook.url + "/mutate-pods", data=body, headers={"Content-Type": "application/json"}
            ) as response:
                assert response.status in (200, 400)
                await response.read()
        statuses = [await _status(session, webhook.url, case.review) for _ in range(3)]
    assert statuses == [200, 200, 200]


async def _status(session: aiohttp.ClientSession, url: str, review: dict[str, Any]) -> int:
    async with session.post(url + "/mutate-pods", json=review) as response:
        return response.status
