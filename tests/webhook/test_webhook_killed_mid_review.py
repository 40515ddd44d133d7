"""A webhook process killed outright while it decides a review resets that connection.

kube-apiserver calls a webhook again when the call fails with a connection reset (so another
replica behind the Service answers), never when it fails with an EOF: a replica lost to kill -9
or the OOM killer must not cost a pod admission. The review here waits on a TFJob GET that the API
server answers slowly (a cache miss), the process is killed meanwhile, and the client sees a reset.
An answered review's connection still closes in the ordinary way (the answer arrives whole).
"""

from __future__ import annotations

import errno
import http.client
import json
import signal
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.testing import ApiServerHandle, start_apiserver
from tests.integration.operator import WebhookHandle, running_webhook

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "admissionreviews"
TCP_CLOSE = 7  # Linux's tcp_states.h


@pytest.fixture
def apiserver() -> Iterator[ApiServerHandle]:
    with start_apiserver() as handle:
        yield handle


def _review() -> bytes:
    case: dict[str, Any] = json.loads((FIXTURES / "mutate-seed-worker-0.json").read_text())
    return json.dumps(case["review"]).encode()


def _client(webhook: WebhookHandle, cert_dir: Path) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
    return http.client.HTTPSConnection("127.0.0.1", webhook.port, context=context, timeout=30)


def _post(client: http.client.HTTPSConnection) -> http.client.HTTPResponse:
    client.request("POST", "/mutate-pods", _review(), {"Content-Type": "application/json"})
    return client.getresponse()


def test_a_review_in_flight_when_the_process_is_killed_ends_in_a_reset(
    apiserver: ApiServerHandle, tmp_path: Path
) -> None:
    with running_webhook(apiserver, tmp_path) as webhook:
        client = _client(webhook, tmp_path / "webhook-certs")
        client.connect()
        # The job is not in the webhook's cache: the review waits on a GET the server delays.
        apiserver.inject({"latencySeconds": 10.0})
        client.request("POST", "/mutate-pods", _review(), {"Content-Type": "application/json"})
        time.sleep(1.0)
        webhook.process.send_signal(signal.SIGKILL)
        webhook.process.wait(10)
        time.sleep(0.3)
        # Read below TLS (Python's ssl reports a reset as an EOF; Go's, kube-apiserver's, does
        # not): a reset leaves the socket CLOSED with ECONNRESET pending; an ordinary close
        # would leave it in CLOSE_WAIT with no error.
        connection = client.sock
        assert connection is not None
        state = connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]
        assert (state, connection.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)) == (
            TCP_CLOSE,
            errno.ECONNRESET,
        )
        apiserver.clear_faults()


def test_an_answered_review_arrives_whole_and_the_connection_stays_usable(
    apiserver: ApiServerHandle, tmp_path: Path
) -> None:
    with running_webhook(apiserver, tmp_path) as webhook:
        client = _client(webhook, tmp_path / "webhook-certs")
        for _ in range(3):
            answer = _post(client)
            body = json.loads(answer.read())
            assert answer.status == 200
            assert body["response"]["uid"] == json.loads(_review())["request"]["uid"]
