"""Shutting down without losing a request: what a kept-alive client sees while the webhook drains.

During the shutdown delay (``HttpsServer.drain``) every answer carries ``Connection: close`` and
new connections are still served; then ``HttpsServer.stop`` closes the connections with nothing
under way and finishes each request already begun. Asserted here is what the client gets, over
real TLS; how fast is the upgrade rig's business (``bench/upgrade.py``).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from pathlib import Path

import pytest

from certs.authority import CertificateAuthority
from tests.webhook.admission_cases import load_cases
from tests.webhook.webhook_harness import client_context, make_cert_dir, running_webhook
from webhook.connections import ConnectionLimits
from webhook.server import HttpsServer

SEED = load_cases("mutate-seed-ps-0")[0]
BODY = json.dumps(SEED.review).encode()
HEAD = (
    b"POST /mutate-pods HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(BODY)}\r\n\r\n".encode()
)
# Deadlines far beyond the test: every closing seen here is the drain's.
PATIENT = ConnectionLimits(idle_timeout=60.0, header_timeout=60.0, body_timeout=60.0, handshake_timeout=60.0)
WITHIN = 15.0

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@pytest.fixture
def ca(tmp_path: Path) -> CertificateAuthority:
    return make_cert_dir(tmp_path)


async def _open(ca: CertificateAuthority, port: int) -> Connection:
    return await asyncio.open_connection("127.0.0.1", port, ssl=client_context(ca))


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    """The status and headers (lower-cased) of one answer, its body read and checked."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WITHIN)
    status_line, *lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines if line)
    headers = {name.lower(): value for name, value in headers.items()}
    body = json.loads(await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), WITHIN))
    assert body["response"]["uid"] == SEED.review["request"]["uid"]
    return int(status_line.split(" ", 2)[1]), headers


async def _ask(connection: Connection) -> tuple[int, dict[str, str]]:
    reader, writer = connection
    writer.write(HEAD + BODY)
    return await _read_answer(reader)


async def _closed_by_server(reader: asyncio.StreamReader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), WITHIN) == b""
    except (ConnectionError, ssl.SSLError):
        return True


def _server(webhook: object) -> HttpsServer:
    server = getattr(webhook, "server", None)
    assert isinstance(server, HttpsServer)
    return server


async def test_while_draining_a_kept_alive_client_is_told_to_close_and_the_connection_ends(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs, limits=PATIENT) as webhook:
        connection = await _open(ca, webhook.port)
        status, headers = await _ask(connection)
        assert status == 200 and headers.get("connection", "").lower() != "close"
        _server(webhook).drain()
        status, headers = await _ask(connection)
        assert status == 200 and headers["connection"].lower() == "close"
        assert await _closed_by_server(connection[0])


async def test_while_draining_new_connections_are_still_served_and_told_to_close(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs, limits=PATIENT) as webhook:
        _server(webhook).drain()
        connection = await _open(ca, webhook.port)
        status, headers = await _ask(connection)
        assert status == 200 and headers["connection"].lower() == "close"
        assert await _closed_by_server(connection[0])


async def test_an_idle_connection_is_closed_and_one_receiving_a_request_is_answered(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs, limits=PATIENT) as webhook:
        idle = await _open(ca, webhook.port)
        arriving = await _open(ca, webhook.port)
        for connection in (idle, arriving):
            assert (await _ask(connection))[0] == 200
        server = _server(webhook)
        server.drain()
        # A request's head is arriving on one connection when the idle ones are closed.
        arriving[1].write(HEAD[:30])
        await asyncio.sleep(0.3)
        assert server.close_idle_connections() == 1
        assert await _closed_by_server(idle[0])
        arriving[1].write(HEAD[30:] + BODY)
        status, headers = await _read_answer(arriving[0])
        assert status == 200 and headers["connection"].lower() == "close"
        assert await _closed_by_server(arriving[0])


async def test_stopping_finishes_a_request_already_begun_and_closes_the_idle_connection(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs, limits=PATIENT) as webhook:
        idle = await _open(ca, webhook.port)
        assert (await _ask(idle))[0] == 200
        in_flight = await _open(ca, webhook.port)
        in_flight[1].write(HEAD + BODY[:100])  # head read, body still coming
        await asyncio.sleep(0.3)
        stopping = asyncio.create_task(_server(webhook).stop())
        assert await _closed_by_server(idle[0])
        assert not stopping.done(), "stopped with a request under way"
        in_flight[1].write(BODY[100:])
        status, headers = await _read_answer(in_flight[0])
        assert status == 200 and headers["connection"].lower() == "close"
        await asyncio.wait_for(stopping, WITHIN)
        assert await _closed_by_server(in_flight[0])


async def test_bytes_of_a_request_not_yet_read_keep_a_connection_from_counting_as_idle(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs, limits=PATIENT) as webhook:
        connection = await _open(ca, webhook.port)
        assert (await _ask(connection))[0] == 200
        server = _server(webhook)
        await asyncio.sleep(0.1)
        (open_connection,) = server._connections.values()
        assert open_connection.idle
        # Written and checked in one turn of the event loop, which serves both ends: the request
        # sits in the server socket's kernel buffer, not read yet (loopback delivers at once).
        connection[1].write(HEAD + BODY)
        time.sleep(0.1)  # noqa: ASYNC251 -- the point: the loop must not read in between
        assert not open_connection.idle
        server.drain()
        assert server.close_idle_connections() == 0
        status, headers = await _read_answer(connection[0])
        assert status == 200 and headers["connection"].lower() == "close"
