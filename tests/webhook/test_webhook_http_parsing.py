"""The HTTP/1.1 behaviour the webhook takes from aiohttp's parser (llhttp), pinned over raw TLS.

Each request here is one a hand-made parser got wrong (issue 26): request smuggling shapes, a
Content-Length beyond ``int()``'s digit limit, requests RFC 9112/9110 say to refuse. Every refusal
must be a 400 with a ``metav1.Status`` body, and the connection must close after it, so that nothing
pipelined behind a malformed request is ever answered.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path

import pytest

from certs.authority import CertificateAuthority
from tests.webhook.admission_cases import load_cases
from tests.webhook.webhook_harness import client_context, make_cert_dir, running_webhook
from webhook.connections import ConnectionLimits

SEED = load_cases("mutate-seed-ps-0")[0]
BODY = json.dumps(SEED.review).encode()
HEAD = b"POST /mutate-pods HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
REVIEW = HEAD + f"Content-Length: {len(BODY)}\r\n\r\n".encode() + BODY
CLOSING_REVIEW = REVIEW.replace(b"Host: webhook\r\n", b"Host: webhook\r\nConnection: close\r\n")
# Generous: the machine is shared; what matters is that the connection does get closed.
CLOSED_WITHIN = 15.0


@pytest.fixture
def ca(tmp_path: Path) -> CertificateAuthority:
    return make_cert_dir(tmp_path)


async def _exchange(ca: CertificateAuthority, port: int, data: bytes) -> bytes:
    """Everything the webhook sends back for ``data`` until it closes the connection (which it
    must do within ``CLOSED_WITHIN``: else TimeoutError)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context(ca))
    try:
        writer.write(data)
        return await asyncio.wait_for(reader.read(), CLOSED_WITHIN)
    except (ConnectionError, ssl.SSLError):
        return b""
    finally:
        writer.close()


def _answers(stream: bytes) -> list[bytes]:
    """The status lines of the answers in ``stream``."""
    return [line for line in stream.split(b"\r\n") if line.startswith(b"HTTP/1.")]


def _refused_with_400(stream: bytes) -> None:
    # aiohttp answers what its parser refuses as HTTP/1.0 (it could not read the request's version).
    answers = _answers(stream)
    assert len(answers) == 1 and answers[0].endswith(b" 400 Bad Request"), stream[:300]
    # _exchange returned, so the webhook closed the connection after this one answer.
    body = stream.partition(b"\r\n\r\n")[2]
    status = json.loads(body)
    assert status["kind"] == "Status" and status["code"] == 400
    assert status["message"].startswith("malformed HTTP request: ")


def _with_review_behind(first: bytes) -> bytes:
    """``first``, then a valid review pipelined behind it on the same connection."""
    return first + REVIEW


@pytest.mark.parametrize(
    ("name", "request_bytes"),
    [
        ("a Content-Length of 5,000 digits", HEAD + b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n" + BODY),
        (
            "a valid Content-Length behind 4,990 leading zeros",
            HEAD + b"Content-Length: " + b"0" * 4990 + str(len(BODY)).encode() + b"\r\n\r\n" + BODY,
        ),
        (
            "a bare LF inside a header value hiding Transfer-Encoding",
            HEAD
            + b"X-Note: a\nTransfer-Encoding: chunked\r\n"
            + f"Content-Length: {len(BODY)}\r\n\r\n".encode()
            + BODY,
        ),
        (
            "a bare CR inside a header value",
            HEAD + b"X-Note: a\rb\r\n" + f"Content-Length: {len(BODY)}\r\n\r\n".encode() + BODY,
        ),
        (
            "a NUL inside a header value",
            HEAD + b"X-Note: a\x00b\r\n" + f"Content-Length: {len(BODY)}\r\n\r\n".encode() + BODY,
        ),
        (
            "no Host on HTTP/1.1",
            b"POST /mutate-pods HTTP/1.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(BODY)}\r\n\r\n".encode()
            + BODY,
        ),
    ],
)
async def test_malformed_requests_get_400_and_nothing_behind_them_is_answered(
    ca: CertificateAuthority, tmp_path: Path, name: str, request_bytes: bytes
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        stream = await _exchange(ca, webhook.port, _with_review_behind(request_bytes))
        # The webhook still serves the next connection.
        assert _answers(await _exchange(ca, webhook.port, CLOSING_REVIEW)) == [b"HTTP/1.1 200 OK"]
    _refused_with_400(stream)


async def test_expect_100_continue_on_http_1_0_gets_no_100(ca: CertificateAuthority, tmp_path: Path) -> None:
    request = (
        b"POST /mutate-pods HTTP/1.0\r\nHost: webhook\r\nContent-Type: application/json\r\n"
        + b"Expect: 100-continue\r\n"
        + f"Content-Length: {len(BODY)}\r\n\r\n".encode()
        + BODY
    )
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        stream = await _exchange(ca, webhook.port, request)
    answers = _answers(stream)
    assert len(answers) == 1 and answers[0].endswith(b" 200 OK"), stream[:300]


async def test_expect_100_continue_on_http_1_1_gets_a_100_before_the_body(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        reader, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
        writer.write(
            HEAD
            + b"Expect: 100-continue\r\nConnection: close\r\n"
            + f"Content-Length: {len(BODY)}\r\n\r\n".encode()
        )
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CLOSED_WITHIN)
        writer.write(BODY)
        rest = await asyncio.wait_for(reader.read(), CLOSED_WITHIN)
        writer.close()
    assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert _answers(rest) == [b"HTTP/1.1 200 OK"]


async def test_a_head_request_gets_no_body_and_the_next_answer_is_intact(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    head_request = b"HEAD /mutate-pods HTTP/1.1\r\nHost: webhook\r\n\r\n"
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        stream = await _exchange(ca, webhook.port, head_request + CLOSING_REVIEW)
    first, _, rest = stream.partition(b"\r\n\r\n")
    assert first.startswith(b"HTTP/1.1 405"), stream[:300]
    # No body after the HEAD answer's head: the next bytes are the review's answer.
    assert rest.startswith(b"HTTP/1.1 200 OK"), rest[:200]
    answer = json.loads(rest.partition(b"\r\n\r\n")[2])
    assert answer["response"]["allowed"] is True


async def test_a_chunked_review_is_answered(ca: CertificateAuthority, tmp_path: Path) -> None:
    chunks = [BODY[i : i + 1000] for i in range(0, len(BODY), 1000)]
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks) + b"0\r\n\r\n"
    request = HEAD + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + body
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        stream = await _exchange(ca, webhook.port, request)
    assert _answers(stream) == [b"HTTP/1.1 200 OK"], stream[:300]
    answer = json.loads(stream.partition(b"\r\n\r\n")[2])
    assert answer["response"]["uid"] == SEED.review["request"]["uid"]
    assert answer["response"]["allowed"] is True and "patch" in answer["response"]


async def test_a_chunked_body_over_the_limit_gets_413(ca: CertificateAuthority, tmp_path: Path) -> None:
    chunk = b"x" * 4096
    body = b"%x\r\n%s\r\n" % (len(chunk), chunk) * 8 + b"0\r\n\r\n"
    request = HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + body
    async with running_webhook(tmp_path, SEED.tfjobs, max_body_bytes=16_384) as webhook:
        stream = await _exchange(ca, webhook.port, request)
    assert _answers(stream) == [b"HTTP/1.1 413 Request Entity Too Large"], stream[:300]
    assert json.loads(stream.partition(b"\r\n\r\n")[2])["reason"] == "RequestEntityTooLarge"


async def test_slow_header_connections_are_closed_while_a_client_is_served(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    # 300 connections trickle a header a byte at a time (slowloris); each must be closed once the
    # header deadline passes, while a client on its own connection keeps getting answers.
    slow_count = 300
    limits = ConnectionLimits(header_timeout=2.0, max_connections=slow_count + 10)
    async with running_webhook(tmp_path, SEED.tfjobs, limits=limits) as webhook:
        client = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
        slow = [
            await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
            for _ in range(slow_count)
        ]
        stop = asyncio.Event()

        async def trickle(writer: asyncio.StreamWriter) -> None:
            writer.write(b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            while not stop.is_set() and not writer.is_closing():
                writer.write(b"a")
                await asyncio.sleep(0.25)

        async def closed(reader: asyncio.StreamReader) -> bytes:
            try:
                return await asyncio.wait_for(reader.read(), limits.header_timeout + CLOSED_WITHIN)
            except (ConnectionError, ssl.SSLError):
                return b""

        trickling = [asyncio.create_task(trickle(writer)) for _, writer in slow]
        closing = asyncio.gather(*(closed(reader) for reader, _ in slow))
        served = 0
        while not closing.done():
            client[1].write(REVIEW)
            head = await asyncio.wait_for(client[0].readuntil(b"\r\n\r\n"), CLOSED_WITHIN)
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await client[0].readexactly(length)
            assert head.startswith(b"HTTP/1.1 200 OK")
            served += 1
            await asyncio.sleep(0.05)
        answers = await closing
        stop.set()
        for task in trickling:
            task.cancel()
        for _, writer in [*slow, client]:
            writer.close()
    assert served > 0
    assert all(answer == b"" or answer.startswith(b"HTTP/1.1 408") for answer in answers)
    assert sum(answer.startswith(b"HTTP/1.1 408") for answer in answers) >= slow_count * 0.9
