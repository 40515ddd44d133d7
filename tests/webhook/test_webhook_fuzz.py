"""Hypothesis fuzzing of the running HTTPS webhook with malformed and random reviews.

Whatever is sent, the answer is either HTTP 200 with a well-formed AdmissionReview (same
apiVersion, echoed uid, a status message on denial, a decodable patch that applies to the object)
or a 4xx with a message. Never a 5xx, never an internal error, never a dropped connection.
"""

from __future__ import annotations

import base64
import copy
import http.client
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.webhook.admission_cases import json_paths, load_cases
from tests.webhook.webhook_harness import ThreadedWebhook, client_context, make_cert_dir

CASES = load_cases()
SEED_JOBS = {json.dumps(job, sort_keys=True): job for case in CASES for job in case.tfjobs}
FUZZ = settings(max_examples=120, deadline=None, database=None, suppress_health_check=list(HealthCheck))

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
label_values = st.sampled_from(
    ["tftest", "ce", "ghost", "", "ps", "worker", "chief", "evaluator", "0", "1", "3", "-1", "x"]
)


@pytest.fixture(scope="module")
def webhook_connection(tmp_path_factory: pytest.TempPathFactory) -> Iterator[http.client.HTTPSConnection]:
    cert_dir: Path = tmp_path_factory.mktemp("fuzz-certs")
    ca = make_cert_dir(cert_dir)
    # Decisions are logged at DEBUG/INFO: with logging on, a logging defect would show up here too.
    webhook_logger = logging.getLogger("webhook")
    saved_level = webhook_logger.level
    webhook_logger.setLevel(logging.DEBUG)
    with ThreadedWebhook(cert_dir, list(SEED_JOBS.values())) as webhook:
        connection = http.client.HTTPSConnection(
            "127.0.0.1", webhook.port, context=client_context(ca), timeout=10
        )
        yield connection
        connection.close()
    webhook_logger.setLevel(saved_level)


def _post(connection: http.client.HTTPSConnection, path: str, body: bytes) -> tuple[int, Any]:
    connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    payload = response.read()
    assert response.getheader("Content-Type", "").startswith("application/json")
    return response.status, json.loads(payload)


def _check(status: int, answer: Any, sent: Any) -> None:
    assert status < 500, answer
    if status != 200:
        assert 400 <= status < 500
        assert isinstance(answer["message"], str) and answer["message"]
        return
    assert answer["apiVersion"] == sent["apiVersion"]
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == sent["request"]["uid"]
    assert isinstance(response["allowed"], bool)
    if not response["allowed"]:
        assert isinstance(response["status"]["code"], int)
        assert response["status"]["message"]
        assert "internal error" not in response["status"]["message"]
        assert "patch" not in response
    if "patch" in response:
        assert response["patchType"] == "JSONPatch"
        operations = json.loads(base64.b64decode(response["patch"]))
        jsonpatch.apply_patch(sent["request"]["object"], operations)
    for warning in response.get("warnings", []):
        assert isinstance(warning, str) and len(warning) <= 120


@FUZZ
@given(body=json_values, path=st.sampled_from(["/mutate-pods", "/validate-tfjobs"]))
def test_random_json_bodies(webhook_connection: http.client.HTTPSConnection, body: Any, path: str) -> None:
    status, answer = _post(webhook_connection, path, json.dumps(body).encode())
    assert 400 <= status < 500 and answer["message"]


@FUZZ
@given(raw=st.binary(max_size=200), path=st.sampled_from(["/mutate-pods", "/validate-tfjobs"]))
def test_random_bytes(webhook_connection: http.client.HTTPSConnection, raw: bytes, path: str) -> None:
    status, answer = _post(webhook_connection, path, raw)
    assert 400 <= status < 500 and answer["message"]


@st.composite
def damaged_reviews(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A fixture review with a few values replaced by random JSON (or removed)."""
    case = draw(st.sampled_from(CASES))
    review = copy.deepcopy(case.review)
    candidates = [path for path in json_paths(review["request"]) if path and path[0] != "uid"]
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(candidates))
        parent: Any = review["request"]
        try:
            for step in path[:-1]:
                parent = parent[step]
            if draw(st.booleans()) and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = draw(json_values | label_values)
        except (KeyError, IndexError, TypeError):
            continue
    return case.endpoint, review


@FUZZ
@given(sample=damaged_reviews())
def test_damaged_fixture_reviews(
    webhook_connection: http.client.HTTPSConnection, sample: tuple[str, Any]
) -> None:
    path, review = sample
    status, answer = _post(webhook_connection, path, json.dumps(review).encode())
    _check(status, answer, review)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


hostile_values = (
    st.integers(1, 300_000).map(lambda size: "h" * size)
    | st.sampled_from(["9" * 5000, "-" * 64, "Not_A_Label!", "\u00e9" * 70, "\x00", "../../etc"])
    | st.integers(100, 400).map(_nested)
)


@FUZZ
@given(sample=damaged_reviews(), data=st.data())
def test_hostile_values_at_every_path(
    webhook_connection: http.client.HTTPSConnection, sample: tuple[str, Any], data: st.DataObject
) -> None:
    """Megabyte-scale strings, labels Kubernetes would reject and deep nesting, anywhere in a review:
    never a 5xx or an internal error, and whatever is echoed back stays short."""
    path, review = sample
    candidates = [p for p in json_paths(review["request"]) if p and p[0] != "uid"]
    target = data.draw(st.sampled_from(candidates))
    parent: Any = review["request"]
    try:
        for step in target[:-1]:
            parent = parent[step]
        parent[target[-1]] = data.draw(hostile_values)
    except (KeyError, IndexError, TypeError):
        pass
    status, answer = _post(webhook_connection, path, json.dumps(review).encode())
    _check(status, answer, review)
    message = answer.get("message") or answer.get("response", {}).get("status", {}).get("message", "")
    assert len(message) < 2048 or path == "/validate-tfjobs", "pod answers echo values clipped"


pods = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "labels": st.dictionaries(
                    st.sampled_from(
                        [
                            "training.kubeflow.org/job-name",
                            "training.kubeflow.org/replica-type",
                            "training.kubeflow.org/replica-index",
                        ]
                    ),
                    label_values,
                ),
                "annotations": st.none()
                | st.dictionaries(st.text(max_size=30), st.text(max_size=5), max_size=3),
                "namespace": st.sampled_from(["default", "research", ""]),
            },
        ),
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "containers": st.lists(
                    st.fixed_dictionaries(
                        {"name": st.sampled_from(["tensorflow", "sidecar", ""])},
                        optional={
                            "env": st.none()
                            | st.lists(
                                st.fixed_dictionaries(
                                    {"name": st.sampled_from(["TF_CONFIG", "OTHER"])},
                                    optional={"value": st.text(max_size=10)},
                                ),
                                max_size=3,
                            )
                        },
                    ),
                    max_size=3,
                ),
                "schedulerName": st.sampled_from(["default-scheduler", "volcano", ""]),
            },
        ),
    }
)


@FUZZ
@given(
    pod=pods,
    namespace=st.sampled_from(["default", "research", ""]),
    version=st.sampled_from(["admission.k8s.io/v1", "admission.k8s.io/v1beta1"]),
)
def test_random_pods(
    webhook_connection: http.client.HTTPSConnection, pod: Any, namespace: str, version: str
) -> None:
    review = {
        "apiVersion": version,
        "kind": "AdmissionReview",
        "request": {
            "uid": "fuzz",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE",
            "namespace": namespace,
            "object": pod,
        },
    }
    status, answer = _post(webhook_connection, "/mutate-pods", json.dumps(review).encode())
    assert status == 200
    _check(status, answer, review)
