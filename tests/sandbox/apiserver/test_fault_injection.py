"""Fault injection: outages refuse and drop connections and come back with the same state; error
answers carry the codes and Retry-After kube-apiserver uses; compaction sends resuming watches 410;
the ops endpoint takes only well-formed requests from system:masters, via real kubectl too."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from sandbox.testing import ApiServerHandle, start_apiserver
from tests.sandbox.apiserver.conftest import Kubectl, raw_request

CONFIGMAP = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}, "data": {"a": "1"}}'


@pytest.fixture
def api() -> Iterator[ApiServerHandle]:
    """A server of the test's own: faults change it for everyone who shares it."""
    with start_apiserver(install_tfjob_crd=False) as handle:
        yield handle


async def _connects(api: ApiServerHandle) -> bool:
    try:
        _reader, writer = await asyncio.open_connection("127.0.0.1", api.server.port)
    except OSError:
        return False
    writer.close()
    return True


async def test_an_outage_refuses_connections_drops_watches_and_comes_back_with_the_same_state(
    api: ApiServerHandle,
) -> None:
    code, _, _ = await raw_request(api, "POST", "/api/v1/namespaces/default/configmaps", CONFIGMAP)
    assert code == 201
    context = ssl.create_default_context(cadata=api.ca_pem.decode())
    headers = {"Authorization": f"Bearer {api.token}"}
    async with aiohttp.ClientSession() as session:
        watch = await session.get(
            api.url + "/api/v1/namespaces/default/configmaps?watch=true", headers=headers, ssl=context
        )
        assert watch.status == 200
        code, state, _ = await raw_request(api, "POST", "/sandbox/faults", b'{"outageSeconds": 1.5}')
        assert code == 200 and state["injected"]["outages"] == 1
        started = time.monotonic()
        # The open watch is cut: the stream ends without a clean close.
        with pytest.raises(aiohttp.ClientError):
            async with asyncio.timeout(5):
                async for _line in watch.content:
                    pass
        watch.release()
    await asyncio.sleep(0.3)
    assert not await _connects(api), "new connections are refused during the outage"
    while not await _connects(api):
        assert time.monotonic() - started < 10, "the server did not come back"
        await asyncio.sleep(0.05)
    assert time.monotonic() - started >= 1.4
    code, kept, _ = await raw_request(api, "GET", "/api/v1/namespaces/default/configmaps/kept")
    assert code == 200 and kept["data"] == {"a": "1"}


async def test_an_outage_asked_for_during_an_outage_makes_it_last_longer(api: ApiServerHandle) -> None:
    started = time.monotonic()
    api.inject({"outageSeconds": 1.0})
    await asyncio.sleep(0.5)
    assert not await _connects(api)
    api.inject({"outageSeconds": 1.5})  # through the handle: the server itself is away
    while not await _connects(api):
        assert time.monotonic() - started < 10, "the server did not come back"
        await asyncio.sleep(0.05)
    assert time.monotonic() - started >= 1.9
    code, state, _ = await raw_request(api, "GET", "/sandbox/faults")
    assert code == 200 and state["injected"]["outages"] == 2 and state["outageRemainingSeconds"] == 0


async def test_a_fraction_of_requests_is_answered_429_with_retry_after_or_500(api: ApiServerHandle) -> None:
    api.inject({"errors": {"fraction": 1.0, "code": 429, "retryAfterSeconds": 2}})
    code, body, headers = await raw_request(api, "GET", "/api/v1/namespaces")
    assert code == 429 and headers["Retry-After"] == "2"
    assert body["reason"] == "TooManyRequests" and body["details"]["retryAfterSeconds"] == 2
    # The fault endpoint itself is never faulted, so the faults can always be cleared.
    code, state, _ = await raw_request(api, "GET", "/sandbox/faults")
    assert code == 200 and state["injected"]["errors-429"] == 1
    api.inject({"errors": {"fraction": 0.5, "code": 500}})
    codes = [(await raw_request(api, "GET", "/api/v1/namespaces"))[0] for _ in range(60)]
    assert set(codes) == {200, 500}, "about half fail, the rest are served"
    api.clear_faults()
    assert {(await raw_request(api, "GET", "/api/v1/namespaces"))[0] for _ in range(10)} == {200}


async def test_latency_is_added_to_every_request(api: ApiServerHandle) -> None:
    api.inject({"latencySeconds": 0.3})
    started = time.monotonic()
    code, _, _ = await raw_request(api, "GET", "/api/v1/namespaces")
    assert code == 200 and time.monotonic() - started >= 0.3
    api.clear_faults()


async def test_compaction_sends_a_resuming_watch_410_gone(api: ApiServerHandle) -> None:
    code, created, _ = await raw_request(api, "POST", "/api/v1/namespaces/default/configmaps", CONFIGMAP)
    version = created["metadata"]["resourceVersion"]
    for index in range(3):
        body = json.dumps({"metadata": {"name": f"more-{index}"}}).encode()
        await raw_request(api, "POST", "/api/v1/namespaces/default/configmaps", body)
    api.inject({"compact": True, "dropWatches": True})
    code, body, _ = await raw_request(
        api, "GET", f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={version}"
    )
    # As kube-apiserver does: the watch opens, and its only event is a 410 ERROR.
    assert code == 200
    assert body["type"] == "ERROR" and body["object"]["code"] == 410, body


async def test_the_endpoint_rejects_bad_requests_and_users_outside_system_masters(
    api: ApiServerHandle,
) -> None:
    for body in (
        b"[]",
        b"not json",
        b'{"outageSeconds": -1}',
        b'{"outageSeconds": 1e9}',
        b'{"errors": {"fraction": 2}}',
        b'{"errors": {"code": 404}}',
        b'{"errors": {"fraction": 0.1, "colour": "red"}}',
        b'{"latencySeconds": true}',
        b'{"restart": true}',
    ):
        code, answer, _ = await raw_request(api, "POST", "/sandbox/faults", body)
        assert code == 400, (body, answer)
        assert answer["kind"] == "Status" and answer["reason"] == "BadRequest"
    token, _ = api.add_user("mallory")
    code, answer, _ = await raw_request(api, "POST", "/sandbox/faults", b'{"outageSeconds": 5}', token=token)
    assert code == 403
    code, state, _ = await raw_request(api, "GET", "/sandbox/faults")
    assert state["injected"] == {} and state["errors"] is None


def test_kubectl_drives_the_fault_endpoint(api: ApiServerHandle, tmp_path: Path) -> None:
    kubectl = Kubectl(api.kubeconfig, str(tmp_path / "cache"))
    request = tmp_path / "faults.json"
    request.write_text('{"errors": {"fraction": 0.25, "code": 500}, "latencySeconds": 0.01}')
    kubectl.run("create", "--raw", "/sandbox/faults", "-f", str(request))
    shown = json.loads(kubectl.run("get", "--raw", "/sandbox/faults").stdout)
    assert shown["errors"] == {"fraction": 0.25, "code": 500, "retryAfterSeconds": 1}
    assert shown["latencySeconds"] == 0.01
    kubectl.run("delete", "--raw", "/sandbox/faults")
    shown = json.loads(kubectl.run("get", "--raw", "/sandbox/faults").stdout)
    assert shown["errors"] is None and shown["latencySeconds"] == 0.0
