"""The webhook's HTTP/1.1 over real TLS: what kube-apiserver's client does (keep-alive, a query on
the path, pipelining, ``Expect: 100-continue``) is served; what it never does is refused clearly; a
client that does not read its answers holds neither memory nor its connection slot."""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from certs.authority import CertificateAuthority
from tests.webhook.admission_cases import load_cases
from tests.webhook.webhook_harness import client_context, make_cert_dir, running_webhook
from tfjob.settings import Settings
from webhook.app import build_app
from webhook.cache import StaticJobs
from webhook.http11 import HttpProtocol, Intake
from webhook.metrics import WebhookMetrics

SEED = load_cases("mutate-seed-ps-0")[0]
BODY = json.dumps(SEED.review).encode()
WITHIN = 15.0


@pytest.fixture
def ca(tmp_path: Path) -> CertificateAuthority:
    return make_cert_dir(tmp_path)


def _request(
    path: str = "/mutate-pods", *, extra: bytes = b"", body: bytes = BODY, version: bytes = b"1.1"
) -> bytes:
    return (
        b"POST " + path.encode() + b" HTTP/" + version + b"\r\n"
        + b"Host: webhook\r\nContent-Type: application/json\r\n" + extra
        + f"Content-Length: {len(body)}\r\n\r\n".encode() + body
    )  # fmt: skip


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], Any]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WITHIN)
    lines = head.decode("latin-1").split("\r\n")
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in lines[1:] if line)
    }
    body = await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), WITHIN)
    return int(lines[0].split(" ", 2)[1]), headers, json.loads(body)


async def _at_eof(reader: asyncio.StreamReader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), WITHIN) == b""
    except (ConnectionError, ssl.SSLError):
        return True


async def test_pipelined_requests_are_answered_in_order_on_one_connection(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    reviews = []
    for index in range(5):
        review = json.loads(BODY)
        review["request"]["uid"] = f"uid-{index}"
        reviews.append(json.dumps(review).encode())
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        reader, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
        # All five in one write, a query string on the path as kube-apiserver sends it.
        writer.write(b"".join(_request("/mutate-pods?timeout=10s", body=body) for body in reviews))
        answers = [await _read_answer(reader) for _ in reviews]
        writer.close()
    assert [status for status, _, _ in answers] == [200] * 5
    assert [answer["response"]["uid"] for _, _, answer in answers] == [f"uid-{i}" for i in range(5)]
    assert all(answer["response"]["patchType"] == "JSONPatch" for _, _, answer in answers)


async def test_the_answer_is_the_fixtures_review_response(ca: CertificateAuthority, tmp_path: Path) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        reader, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
        writer.write(_request())
        status, headers, answer = await _read_answer(reader)
        writer.close()
    assert status == 200 and headers["content-type"] == "application/json"
    assert "connection" not in headers  # kept alive
    assert answer["apiVersion"] == SEED.review["apiVersion"] and answer["kind"] == "AdmissionReview"
    assert answer["response"]["uid"] == SEED.review["request"]["uid"]


async def test_expect_100_continue_is_answered_before_the_body(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        reader, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
        request = _request(extra=b"Expect: 100-continue\r\n")
        head, body = request.split(b"\r\n\r\n", 1)
        writer.write(head + b"\r\n\r\n")
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WITHIN)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        writer.write(body)
        status, _, answer = await _read_answer(reader)
        writer.close()
    assert status == 200 and answer["response"]["allowed"] is True


@pytest.mark.parametrize(
    ("extra", "version"), [(b"Connection: close\r\n", b"1.1"), (b"", b"1.0")], ids=["close", "http-1.0"]
)
async def test_a_connection_the_client_does_not_keep_is_closed_after_the_answer(
    ca: CertificateAuthority, tmp_path: Path, extra: bytes, version: bytes
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        reader, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
        writer.write(_request(extra=extra, version=version))
        status, headers, _ = await _read_answer(reader)
        closed = await _at_eof(reader)
        writer.close()
    assert status == 200 and headers["connection"] == "close" and closed


async def test_a_chunked_body_gets_411_with_a_message(ca: CertificateAuthority, tmp_path: Path) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        reader, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
        writer.write(
            b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        )
        status, _, answer = await _read_answer(reader)
        closed = await _at_eof(reader)
        writer.close()
    assert status == 411 and closed
    assert answer["kind"] == "Status" and "Content-Length" in answer["message"]


@pytest.mark.parametrize(
    ("request_bytes", "status", "allow"),
    [
        (b"GET /mutate-pods HTTP/1.1\r\nHost: x\r\n\r\n", 405, "POST"),
        (b"PUT /validate-tfjobs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 405, "POST"),
        (b"POST /mutate-pods/ HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 404, None),
    ],
)
async def test_other_methods_and_paths_are_refused_and_the_connection_kept(
    ca: CertificateAuthority, tmp_path: Path, request_bytes: bytes, status: int, allow: str | None
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        reader, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
        writer.write(request_bytes + _request())
        refused, headers, answer = await _read_answer(reader)
        served, _, review = await _read_answer(reader)
        writer.close()
    assert refused == status and answer["kind"] == "Status" and answer["code"] == status
    assert headers.get("allow") == allow
    assert served == 200 and review["response"]["allowed"] is True


async def test_a_client_gone_mid_body_leaves_the_server_serving(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        _, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
        writer.write(_request()[:-100])
        await asyncio.sleep(0.1)
        writer.close()
        reader, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
        writer.write(_request())
        status, _, _ = await _read_answer(reader)
        writer.close()
    assert status == 200


def test_served_the_same_on_uvloop(tmp_path: Path) -> None:
    # The webhook process runs on uvloop (kube.eventloop), whose TLS transport is not an asyncio
    # class: the same exchange, on the loop production uses.
    uvloop = pytest.importorskip("uvloop")
    ca = make_cert_dir(tmp_path)

    async def exchange() -> list[int]:
        async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
            reader, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
            writer.write(_request() + _request(extra=b"Connection: close\r\n"))
            statuses = [(await _read_answer(reader))[0] for _ in range(2)]
            assert await _at_eof(reader)
            writer.close()
            return statuses

    assert uvloop.run(exchange()) == [200, 200]


class _Transport(asyncio.Transport):
    """The transport side as asyncio drives a protocol: what was written, whether reading is on.
    ``full_after`` writes, it reports a full write buffer, as asyncio does above its high-water mark."""

    def __init__(self, protocol: asyncio.Protocol | None = None, full_after: int | None = None) -> None:
        super().__init__()
        self.protocol, self.full_after = protocol, full_after
        self.written: list[bytes] = []
        self.reading, self.closed, self.aborted, self.buffered = True, False, False, 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written.append(bytes(data))
        if self.full_after is not None and len(self.written) >= self.full_after and self.protocol:
            self.protocol.pause_writing()

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = self.aborted = True

    def get_write_buffer_size(self) -> int:
        return self.buffered


def _protocol(header_timeout: float = 10.0) -> HttpProtocol:
    app = build_app(StaticJobs(SEED.tfjobs), Settings(), WebhookMetrics(CollectorRegistry()))
    limits = Intake(
        idle_timeout=120.0, header_timeout=header_timeout, body_timeout=10.0,
        max_header_bytes=8190, max_headers=64, max_body_bytes=app.intake.max_body_bytes,
    )  # fmt: skip
    return HttpProtocol(app, limits, app.intake.bodies)


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_client_that_does_not_read_its_answers_is_not_read_from() -> None:
    protocol = _protocol()
    transport = _Transport(protocol, full_after=1)
    protocol.connection_made(transport)
    protocol.data_received(_request() * 3)  # three pipelined reviews in one read
    await _settle()
    # The first answer filled the write buffer: no further request is answered, nothing more read.
    assert len(transport.written) == 1 and not transport.reading
    protocol.data_received(_request())  # what was in flight before reading stopped still arrives
    await _settle()
    assert len(transport.written) == 1
    transport.full_after = None
    protocol.resume_writing()
    await _settle()
    assert len(transport.written) == 4 and transport.reading
    assert all(answer.startswith(b"HTTP/1.1 200 OK\r\n") for answer in transport.written)
    protocol.connection_lost(None)


@pytest.mark.parametrize("unread", [0, 4096])
async def test_an_answer_the_client_does_not_take_is_cut_off_after_the_header_timeout(unread: int) -> None:
    protocol = _protocol(header_timeout=0.05)
    transport = _Transport()
    transport.buffered = unread  # what of the answer the peer has not taken yet
    protocol.connection_made(transport)
    protocol.data_received(_request(extra=b"Connection: close\r\n"))
    await _settle()
    assert transport.closed and transport.written[0].startswith(b"HTTP/1.1 200 OK\r\n")
    await asyncio.sleep(0.3)
    assert transport.aborted is bool(unread)
    protocol.connection_lost(None)
