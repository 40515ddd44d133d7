"""Bad requests get kube-apiserver-like 4xx answers, never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sandbox.testing import ApiServerHandle
from tests.sandbox.apiserver.conftest import raw_request

PODS = "/api/v1/namespaces/default/pods"


@pytest.mark.parametrize(
    ("method", "path", "body", "code", "message"),
    [
        (
            "POST",
            PODS,
            {"metadata": [], "spec": {}},
            400,
            'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal array into Go struct '
            "field Pod.metadata of type struct",
        ),
        (
            "POST",
            PODS,
            {"metadata": {"name": "a"}, "spec": {"containers": "x"}},
            400,
            'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct '
            "field Pod.spec.containers of type slice",
        ),
        ("POST", PODS, [1, 2], 400, "the body of the request must be a JSON object"),
        (
            "POST",
            "/api/v1/namespaces/default/services",
            {"metadata": {"name": "s"}, "spec": {"ports": "x"}},
            400,
            'Service in version "v1" cannot be handled as a Service: json: cannot unmarshal string into Go '
            "struct field Service.spec.ports of type slice",
        ),
        (
            "POST",
            "/api/v1/namespaces/nowhere/configmaps",
            {"metadata": {"name": "c"}},
            404,
            'namespaces "nowhere" not found',
        ),
        (
            "POST",
            "/api/v1/pods",
            {"metadata": {"name": "p"}},
            405,
            "the server does not allow this method on the requested resource",
        ),
        ("GET", f"{PODS}?limit=x", None, 400, "invalid limit: x"),
        (
            "GET",
            f"{PODS}?labelSelector=a%20in%20",
            None,
            400,
            "unable to parse requirement: found '', expected: '('",
        ),
        ("POST", f"{PODS}/nope/binding", {"target": {}}, 400, "target.name: Required value"),
        (
            "GET",
            "/apis/nothing.example.com/v1/things",
            None,
            404,
            "the server could not find the requested resource",
        ),
    ],
)
async def test_bad_requests(
    api: ApiServerHandle, method: str, path: str, body: Any, code: int, message: str
) -> None:
    raw = json.dumps(body).encode() if body is not None else b""
    answered, status, _headers = await raw_request(api, method, path, raw)
    assert answered == code
    assert status["kind"] == "Status" and status["code"] == code
    assert status["message"] == message


async def test_malformed_json_patch_is_refused(api: ApiServerHandle) -> None:
    configmap = {"metadata": {"name": "patched-badly"}}
    await raw_request(api, "POST", "/api/v1/namespaces/default/configmaps", json.dumps(configmap).encode())
    code, status, _ = await raw_request(
        api,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/patched-badly",
        b'{"op": "add"}',
        content_type="application/json-patch+json",
    )
    assert code == 400
    code, status, _ = await raw_request(
        api,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/patched-badly",
        b'[{"op": "bogus", "path": "/a"}]',
        content_type="application/json-patch+json",
    )
    assert code == 422 and status["reason"] == "Invalid"


async def test_label_values_longer_than_63_characters_are_invalid(api: ApiServerHandle) -> None:
    long_name = "a" * 64
    pod = {
        "metadata": {"name": "labelled", "labels": {"training.kubeflow.org/job-name": long_name}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    code, status, _ = await raw_request(api, "POST", PODS, json.dumps(pod).encode())
    assert code == 422
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "{long_name}": must be no more than 63 characters',
            "field": "metadata.labels",
        }
    ]
    pod["metadata"]["labels"] = {"bad key!": "x"}
    code, status, _ = await raw_request(api, "POST", PODS, json.dumps(pod).encode())
    assert code == 422 and status["details"]["causes"][0]["message"].startswith(
        'Invalid value: "bad key!": name part must consist of alphanumeric characters'
    )
