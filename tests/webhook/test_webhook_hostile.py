"""Hostile reviews over real HTTPS: bounded metric labels, log lines and lookups, no internal
errors, and TF_CONFIG only for the pods of the TFJob (their controller ownerReference).

Each test here reproduces one defect found by a storm of malformed reviews (issue #10).
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from certs.authority import CertificateAuthority
from tests.webhook.admission_cases import load_cases
from tests.webhook.webhook_harness import client_context, make_cert_dir, running_webhook
from tfjob.wire import TFJob
from webhook.cache import StaticJobs

SEED = load_cases("mutate-seed-ps-0")[0]
JOB_NAME = "training.kubeflow.org/job-name"
MIB = 1024 * 1024


class RecordingJobs:
    """The seed's TFJobs, remembering every lookup made."""

    def __init__(self) -> None:
        self.lookups: list[tuple[str, str]] = []
        self._jobs = StaticJobs(SEED.tfjobs)

    async def get(self, namespace: str, name: str) -> TFJob | None:
        self.lookups.append((namespace, name))
        return await self._jobs.get(namespace, name)


@pytest.fixture
def ca(tmp_path: Path) -> CertificateAuthority:
    return make_cert_dir(tmp_path)


def seed_review(**request: Any) -> dict[str, Any]:
    review = copy.deepcopy(SEED.review)
    review["request"].update(request)
    return review


def seed_pod(review: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = review["request"]["object"]
    return pod


async def post_all(
    ca: CertificateAuthority,
    cert_dir: Path,
    reviews: list[dict[str, Any]] | list[bytes],
    *,
    path: str = "/mutate-pods",
    jobs: Any = None,
) -> tuple[list[tuple[int, dict[str, Any]]], str]:
    """The answers to ``reviews`` (one keep-alive connection) and the webhook's /metrics text."""
    answers = []
    async with (
        running_webhook(cert_dir, jobs if jobs is not None else SEED.tfjobs) as webhook,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1, ssl=client_context(ca))) as session,
    ):
        for review in reviews:
            body = review if isinstance(review, bytes) else orjson.dumps(review)
            async with session.post(
                webhook.url + path, data=body, headers={"Content-Type": "application/json"}
            ) as response:
                answers.append((response.status, await response.json(content_type=None)))
        from prometheus_client import generate_latest

        metrics = generate_latest(webhook.registry).decode()
    return answers, metrics


def _denial(answer: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    status, body = answer
    assert status == 200, body
    response = body["response"]
    assert response["allowed"] is False, response
    status_details: dict[str, Any] = response["status"]
    return status_details


# --- defect 2: metric labels taken from the request --------------------------------------------------


async def test_unknown_operations_share_one_metric_label(ca: CertificateAuthority, tmp_path: Path) -> None:
    reviews = [seed_review(operation=f"OP{i}-" + "x" * 10_000) for i in range(30)]
    reviews += [seed_review(operation=operation) for operation in ("CREATE", "UPDATE", "DELETE", "")]
    answers, metrics = await post_all(ca, tmp_path, reviews)
    assert all(status == 200 for status, _ in answers)
    operations = {
        line.split('operation="', 1)[1].split('"', 1)[0]
        for line in metrics.splitlines()
        if line.startswith("tfgang_webhook_admission_decisions_total{")
    }
    assert operations == {"CREATE", "UPDATE", "DELETE", "other", "none"}
    assert len(metrics) < 64 * 1024


# --- defect 3: unbounded values reach the TFJob lookup ----------------------------------------------


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("job-name", "j" * MIB, "must be no more than 63 characters"),
        ("job-name", "not a label value!", "a valid label must be an empty string"),
        ("namespace", "n" * MIB, "must be no more than 63 characters"),
        ("namespace", "Not_A_Namespace", "a lowercase RFC 1123 label"),
        ("replica-type", "t" * MIB, "must be no more than 63 characters"),
        ("replica-index", "7" * 5000, "must be no more than 63 characters"),
    ],
)
async def test_values_kubernetes_would_reject_are_denied_before_any_lookup(
    ca: CertificateAuthority, tmp_path: Path, where: str, value: str, message: str
) -> None:
    review = seed_review()
    if where == "namespace":
        review["request"]["namespace"] = value
        seed_pod(review)["metadata"]["namespace"] = value
    else:
        seed_pod(review)["metadata"]["labels"][f"training.kubeflow.org/{where}"] = value
    jobs = RecordingJobs()
    [answer], _ = await post_all(ca, tmp_path, [review], jobs=jobs)
    status = _denial(answer)
    assert status["code"] == 400
    assert message in status["message"]
    assert len(status["message"]) < 1024, "the offending value is echoed clipped"
    assert jobs.lookups == []


# --- defect 4: internal errors for odd values -------------------------------------------------------


async def test_a_replica_index_beyond_int_conversion_limits_is_a_400(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    review = seed_review()
    seed_pod(review)["metadata"]["labels"]["training.kubeflow.org/replica-index"] = "9" * 4301
    [answer], _ = await post_all(ca, tmp_path, [review])
    assert _denial(answer)["code"] == 400


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": [value]}
    return value


def _with_nested(review: dict[str, Any], depth: int) -> bytes:
    """``review`` encoded with its ``"NESTED"`` value replaced by ``depth`` levels of nesting
    (no JSON encoder goes that deep)."""
    nested = b'{"a":[' * (depth // 2) + b'"leaf"' + b"]}" * (depth // 2)
    return orjson.dumps(review).replace(b'"NESTED"', nested, 1)


@pytest.mark.parametrize("depth", [500, 1000])
async def test_deeply_nested_values_are_a_400_not_an_internal_error(
    ca: CertificateAuthority, tmp_path: Path, depth: int
) -> None:
    tfjob_review = copy.deepcopy(load_cases("validate-create-missing-image")[0].review)
    tfjob_review["request"]["object"]["spec"]["runPolicy"] = "NESTED"
    pod_review = seed_review()
    seed_pod(pod_review)["spec"]["nodeSelector"] = "NESTED"
    [(status, body)], _ = await post_all(
        ca, tmp_path, [_with_nested(tfjob_review, depth)], path="/validate-tfjobs"
    )
    assert status == 400 and body["code"] == 400 and "levels deep" in body["message"]
    [(status, body)], _ = await post_all(ca, tmp_path, [_with_nested(pod_review, depth)])
    assert status == 400 and "levels deep" in body["message"]


async def test_nesting_a_real_object_could_have_is_answered(ca: CertificateAuthority, tmp_path: Path) -> None:
    review = seed_review()
    seed_pod(review)["metadata"]["annotations"] = {"deep": json.dumps(_nested(200))}
    seed_pod(review)["spec"]["affinity"] = _nested(40)
    [(status, body)], _ = await post_all(ca, tmp_path, [review])
    assert status == 200 and body["response"]["allowed"] is True and "patch" in body["response"]


# --- defect 5: a pod that merely carries the labels -------------------------------------------------


@pytest.mark.parametrize(
    "owners",
    [
        None,
        [],
        [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "name": "tftest",
                "uid": "another-uid",
                "controller": True,
            }
        ],
        [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "tftest-5d8f",
                "uid": "rs-uid",
                "controller": True,
            }
        ],
        [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "name": "tftest",
                "uid": "5c1f6f2e-0a49-4c37-9f51-3a3b1fbd2a11",
            }
        ],  # not the controller
        [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "name": "other-job",
                "uid": "5c1f6f2e-0a49-4c37-9f51-3a3b1fbd2a11",
                "controller": True,
            }
        ],
        [
            {
                "apiVersion": "kubeflow.org/v1beta9",
                "kind": "TFJob",
                "name": "tftest",
                "uid": "5c1f6f2e-0a49-4c37-9f51-3a3b1fbd2a11",
                "controller": True,
            }
        ],
        "not a list",
    ],
    ids=[
        "absent",
        "empty",
        "other-uid",
        "replicaset",
        "not-controller",
        "other-name",
        "other-version",
        "malformed",
    ],
)
async def test_a_pod_not_controlled_by_the_tfjob_is_allowed_unchanged_with_a_warning(
    ca: CertificateAuthority, tmp_path: Path, owners: Any
) -> None:
    review = seed_review()
    metadata = seed_pod(review)["metadata"]
    if owners is None:
        metadata.pop("ownerReferences")
    else:
        metadata["ownerReferences"] = owners
    [(status, body)], _ = await post_all(ca, tmp_path, [review])
    assert status == 200
    response = body["response"]
    assert response["allowed"] is True
    assert "patch" not in response
    [warning] = response["warnings"]
    assert "not controlled by TFJob default/tftest" in warning and len(warning) <= 200


async def test_the_tfjobs_own_pod_still_gets_the_seed_tf_config(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    [(status, body)], _ = await post_all(ca, tmp_path, [seed_review()])
    assert status == 200
    assert body == json.loads(json.dumps(body)) and body["response"]["allowed"] is True
    from tests.webhook.admission_cases import decoded_envelope

    assert decoded_envelope(body) == SEED.expected_envelope()


# --- defect 6: noise and amplification --------------------------------------------------------------


async def test_log_lines_stay_short_whatever_the_review_carries(
    ca: CertificateAuthority, tmp_path: Path, json_log: io.StringIO
) -> None:
    huge = "h" * MIB
    reviews = [seed_review(operation=huge), seed_review(name=huge), seed_review(kind={"kind": huge})]
    review = seed_review()
    seed_pod(review)["metadata"]["labels"]["training.kubeflow.org/replica-type"] = huge
    reviews.append(review)
    review = seed_review()
    seed_pod(review)["metadata"]["labels"]["training.kubeflow.org/replica-type"] = "nope"
    reviews.append(review)
    answers, _ = await post_all(ca, tmp_path, reviews)
    assert all(status == 200 for status, _ in answers)
    lines = json_log.getvalue().splitlines()
    assert lines
    assert max(len(line) for line in lines) < 2048


async def _raw_exchange(ca: CertificateAuthority, port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context(ca))
    writer.write(request)
    try:
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"POST * HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
        b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    ],
    ids=["post-star", "header-without-colon", "two-content-lengths"],
)
async def test_malformed_http_gets_a_status_message_and_one_quiet_log_line(
    ca: CertificateAuthority, tmp_path: Path, json_log: io.StringIO, request_bytes: bytes
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        answer = await _raw_exchange(ca, webhook.port, request_bytes)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith((b"HTTP/1.1 400", b"HTTP/1.0 400"))
    assert b"application/json" in head
    status = json.loads(body)
    assert status["kind"] == "Status" and status["code"] == 400
    assert status["message"].startswith("malformed HTTP request: ")
    records = [json.loads(line) for line in json_log.getvalue().splitlines()]
    about_it = [record for record in records if "malformed HTTP request" in record["message"]]
    assert len(about_it) == 1, records
    assert about_it[0]["level"] in ("INFO", "WARNING")
    assert all(record["level"] not in ("ERROR", "CRITICAL") for record in records), records
    assert all("exc_info" not in record and "Traceback" not in json.dumps(record) for record in records)


async def test_client_error_logs_are_rate_limited(
    ca: CertificateAuthority, tmp_path: Path, json_log: io.StringIO
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        for _ in range(50):
            await _raw_exchange(ca, webhook.port, b"POST * HTTP/1.1\r\nHost: x\r\n\r\n")
    records = [json.loads(line) for line in json_log.getvalue().splitlines()]
    about_it = [record for record in records if "malformed HTTP request" in record["message"]]
    assert 1 <= len(about_it) <= 20
