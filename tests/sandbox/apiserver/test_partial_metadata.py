"""``Accept: ...;as=PartialObjectMetadata``: answers of metadata alone, as kube-apiserver gives them.

What kube-apiserver v1.20 answers to the same requests was read off a running one; the cases
that compare the two servers directly are in
``tests/integration/test_sandbox_agrees_with_kube_apiserver.py``.
"""

from __future__ import annotations

import json
from typing import Any

from sandbox.testing import ApiServerHandle
from tests.sandbox.apiserver.conftest import raw_request

METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
SERVICES = "/api/v1/namespaces/default/services"


def _service(name: str) -> bytes:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"clusterIP": "None", "ports": [{"port": 2222}]},
        }
    ).encode()


def _is_metadata_of(answer: Any, name: str) -> None:
    assert answer["kind"] == "PartialObjectMetadata" and answer["apiVersion"] == "meta.k8s.io/v1"
    assert set(answer) == {"kind", "apiVersion", "metadata"}, "no spec, no status"
    assert answer["metadata"]["name"] == name and answer["metadata"]["labels"] == {"app": name}
    assert answer["metadata"]["uid"] and answer["metadata"]["resourceVersion"]


async def test_writes_and_gets_answer_with_the_metadata_alone_when_asked(api: ApiServerHandle) -> None:
    code, created, _ = await raw_request(api, "POST", SERVICES, _service("pm-a"), accept=METADATA)
    assert code == 201
    _is_metadata_of(created, "pm-a")
    code, got, _ = await raw_request(api, "GET", f"{SERVICES}/pm-a", accept=METADATA)
    assert code == 200
    _is_metadata_of(got, "pm-a")
    assert got["metadata"] == created["metadata"]
    patch = json.dumps({"metadata": {"annotations": {"seen": "yes"}}}).encode()
    code, patched, _ = await raw_request(
        api, "PATCH", f"{SERVICES}/pm-a", patch, content_type="application/merge-patch+json", accept=METADATA
    )
    assert code == 200 and patched["kind"] == "PartialObjectMetadata"
    assert patched["metadata"]["annotations"] == {"seen": "yes"}
    # Without the form, the same object comes whole.
    code, whole, _ = await raw_request(api, "GET", f"{SERVICES}/pm-a")
    assert whole["kind"] == "Service" and whole["spec"]["ports"][0]["port"] == 2222


async def test_the_first_form_the_server_knows_wins(api: ApiServerHandle) -> None:
    await raw_request(api, "POST", SERVICES, _service("pm-b"))
    code, got, _ = await raw_request(
        api, "GET", f"{SERVICES}/pm-b", accept=f"application/json;as=Unheard;g=meta.k8s.io;v=v1, {METADATA}"
    )
    assert code == 200 and got["kind"] == "PartialObjectMetadata"
    code, got, _ = await raw_request(api, "GET", f"{SERVICES}/pm-b", accept=f"application/json, {METADATA}")
    assert code == 200 and got["kind"] == "Service"
    code, got, _ = await raw_request(
        api, "GET", f"{SERVICES}/pm-b", accept=METADATA.replace("v=v1", "v=v1beta1")
    )
    assert got["apiVersion"] == "meta.k8s.io/v1beta1"


async def test_a_list_comes_as_a_metadata_list(api: ApiServerHandle) -> None:
    for name in ("pm-c", "pm-d"):
        await raw_request(api, "POST", SERVICES, _service(name))
    code, listed, _ = await raw_request(
        api, "GET", f"{SERVICES}?labelSelector=app+in+(pm-c,pm-d)", accept=METADATA_LIST
    )
    assert code == 200
    assert listed["kind"] == "PartialObjectMetadataList" and listed["apiVersion"] == "meta.k8s.io/v1"
    assert listed["metadata"]["resourceVersion"]
    for item, name in zip(listed["items"], ("pm-c", "pm-d"), strict=True):
        _is_metadata_of(item, name)


async def test_forms_that_do_not_fit_the_answer_or_are_unknown_are_refused_with_406(
    api: ApiServerHandle,
) -> None:
    await raw_request(api, "POST", SERVICES, _service("pm-e"))
    code, refused, _ = await raw_request(api, "GET", SERVICES, accept=METADATA)
    assert code == 406 and refused["reason"] == "NotAcceptable"
    assert "you requested PartialObjectMetadata, but the requested object is a list" in refused["message"]
    code, refused, _ = await raw_request(api, "GET", f"{SERVICES}/pm-e", accept=METADATA_LIST)
    assert code == 406 and "is not a list" in refused["message"]
    code, refused, _ = await raw_request(
        api, "GET", f"{SERVICES}/pm-e", accept="application/json;as=Foo;g=meta.k8s.io;v=v1"
    )
    assert code == 406 and refused["message"].startswith("only the following media types are accepted")
    # An unknown form is refused before anything is written; a list form asked of a write is
    # refused after it, as kube-apiserver does (it checks the answer's shape as it encodes it).
    unknown = "application/json;as=Foo;g=meta.k8s.io;v=v1"
    code, refused, _ = await raw_request(api, "POST", SERVICES, _service("pm-never"), accept=unknown)
    assert code == 406
    code, _, _ = await raw_request(api, "GET", f"{SERVICES}/pm-never")
    assert code == 404
    code, refused, _ = await raw_request(api, "POST", SERVICES, _service("pm-written"), accept=METADATA_LIST)
    assert code == 406 and "is not a list" in refused["message"]
    code, _, _ = await raw_request(api, "GET", f"{SERVICES}/pm-written")
    assert code == 200


async def test_a_status_answer_and_an_error_are_not_transformed(api: ApiServerHandle) -> None:
    code, error, _ = await raw_request(api, "GET", f"{SERVICES}/pm-missing", accept=METADATA)
    assert code == 404 and error["kind"] == "Status"
    configmaps = "/api/v1/namespaces/default/configmaps"
    await raw_request(api, "POST", configmaps, json.dumps({"metadata": {"name": "pm-f"}}).encode())
    # A configmap's delete is answered with a Status, and stays so.
    code, deleted, _ = await raw_request(api, "DELETE", f"{configmaps}/pm-f", accept=METADATA)
    assert code == 200 and deleted["kind"] == "Status" and deleted["status"] == "Success"
    # A service's delete is answered with the object: its metadata, when asked.
    await raw_request(api, "POST", SERVICES, _service("pm-f"))
    code, deleted, _ = await raw_request(api, "DELETE", f"{SERVICES}/pm-f", accept=METADATA)
    assert code == 200
    _is_metadata_of(deleted, "pm-f")


async def test_a_watch_sends_each_object_and_bookmark_as_metadata(api: ApiServerHandle) -> None:
    await raw_request(api, "POST", SERVICES, _service("pm-g"))
    query = (
        "watch=1&timeoutSeconds=1&labelSelector=app%3Dpm-g&sendInitialEvents=true&allowWatchBookmarks=true"
    )
    code, body, _ = await raw_request(api, "GET", f"{SERVICES}?{query}", accept=METADATA)
    assert code == 200 and isinstance(body, str)
    events = [json.loads(line) for line in body.splitlines() if line.strip()]
    assert [event["type"] for event in events[:2]] == ["ADDED", "BOOKMARK"]
    assert {event["type"] for event in events[2:]} <= {"BOOKMARK"}
    _is_metadata_of(events[0]["object"], "pm-g")
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    for bookmark in (event["object"] for event in events[1:]):
        assert bookmark["kind"] == "PartialObjectMetadata" and bookmark["metadata"]["resourceVersion"]
