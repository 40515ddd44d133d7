"""Connection hygiene over real TLS: slow, idle and surplus connections cannot pin the webhook.

The deadlines are set to a second or two here; what is asserted is that the server closes (or
answers) within a generous multiple of them, never how fast it does.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import socket
import ssl
import warnings
from pathlib import Path

import pytest

from certs.authority import CertificateAuthority
from tests.webhook.admission_cases import load_cases
from tests.webhook.webhook_harness import client_context, make_cert_dir, running_webhook
from webhook.connections import BodyBudget, ConnectionLimits

SEED = load_cases("mutate-seed-ps-0")[0]
BODY = json.dumps(SEED.review).encode()
REQUEST = (
    b"POST /mutate-pods HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(BODY)}\r\n\r\n".encode()
    + BODY
)
FAST = ConnectionLimits(idle_timeout=2.0, header_timeout=1.0, body_timeout=1.0, handshake_timeout=2.0)
# Generous: the machine is shared, and what matters is that the connection does get closed.
CLOSED_WITHIN = 15.0


@pytest.fixture
def ca(tmp_path: Path) -> CertificateAuthority:
    return make_cert_dir(tmp_path)


async def _open(ca: CertificateAuthority, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port, ssl=client_context(ca))


async def _read_until_closed(reader: asyncio.StreamReader) -> bytes:
    try:
        return await asyncio.wait_for(reader.read(), CLOSED_WITHIN)
    except (ConnectionError, ssl.SSLError):
        return b""


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
    writer.write(REQUEST)
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CLOSED_WITHIN)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    body = json.loads(await reader.readexactly(length))
    assert body["response"]["allowed"] is True
    return int(head.split(b" ", 2)[1])


async def test_headers_sent_a_byte_at_a_time_are_cut_off(ca: CertificateAuthority, tmp_path: Path) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs, limits=FAST) as webhook:
        reader, writer = await _open(ca, webhook.port)
        writer.write(b"POST /mutate-pods HTTP/1.1\r\n")

        async def trickle() -> None:
            for byte in b"X-Slow: " + b"a" * 200:
                writer.write(bytes([byte]))
                await asyncio.sleep(0.1)

        trickling = asyncio.create_task(trickle())
        try:
            answer = await _read_until_closed(reader)
        finally:
            trickling.cancel()
            writer.close()
    assert answer.startswith(b"HTTP/1.1 408")
    assert b"request headers not received within 1s" in answer


async def test_headers_in_several_pieces_within_the_deadline_are_served(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs, limits=FAST) as webhook:
        reader, writer = await _open(ca, webhook.port)
        head, body = REQUEST.split(b"\r\n\r\n", 1)
        for piece in (head[:20], head[20:], b"\r\n\r\n" + body[:100]):
            writer.write(piece)
            await asyncio.sleep(0.2)
        writer.write(body[100:])
        status_line = await asyncio.wait_for(reader.readline(), CLOSED_WITHIN)
        assert status_line.startswith(b"HTTP/1.1 200")
        writer.close()


async def test_an_idle_connection_is_closed_and_a_busy_one_kept(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs, limits=FAST) as webhook:
        idle_reader, idle_writer = await _open(ca, webhook.port)
        busy_reader, busy_writer = await _open(ca, webhook.port)
        # Requests more often than the idle limit keep a connection open past it.
        for _ in range(5):
            assert await _answer(busy_reader, busy_writer) == 200
            await asyncio.sleep(0.6)
        assert await _read_until_closed(idle_reader) == b""
        assert idle_reader.at_eof()
        assert await _answer(busy_reader, busy_writer) == 200
        for writer in (idle_writer, busy_writer):
            writer.close()


async def test_a_body_that_does_not_arrive_gets_408(ca: CertificateAuthority, tmp_path: Path) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs, limits=FAST) as webhook:
        reader, writer = await _open(ca, webhook.port)
        writer.write(REQUEST[: REQUEST.index(b"\r\n\r\n") + 4 + 50])
        answer = await _read_until_closed(reader)
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408")
    assert json.loads(body)["message"] == "request body not received within 1s"


async def test_oversized_headers_get_a_400_with_a_message(ca: CertificateAuthority, tmp_path: Path) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        reader, writer = await _open(ca, webhook.port)
        writer.write(b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 20_000 + b"\r\n\r\n")
        answer = await _read_until_closed(reader)
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith((b"HTTP/1.0 400", b"HTTP/1.1 400"))
    assert json.loads(body)["message"].startswith("malformed HTTP request: ")


async def test_connections_over_the_cap_wait_while_every_one_is_in_a_request(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    limits = ConnectionLimits(max_connections=2, handshake_timeout=30.0, body_timeout=30.0)
    async with running_webhook(tmp_path, SEED.tfjobs, limits=limits) as webhook:
        held = [await _open(ca, webhook.port) for _ in range(2)]
        # Both are in a request (its head sent, its body coming): neither may be closed for a third.
        head_end = REQUEST.index(b"\r\n\r\n") + 4
        for _, writer in held:
            writer.write(REQUEST[: head_end + 10])
        await asyncio.sleep(0.5)
        waiting = asyncio.create_task(_open(ca, webhook.port))
        await asyncio.sleep(1.0)
        assert not waiting.done(), "a third TLS connection was served over the cap of 2"
        held[0][1].close()
        reader, writer = await asyncio.wait_for(waiting, CLOSED_WITHIN)
        assert await _answer(reader, writer) == 200
        # The other one's request was never cut: its body arrives and it is answered.
        held[1][1].write(REQUEST[head_end + 10 :])
        status_line = await asyncio.wait_for(held[1][0].readline(), CLOSED_WITHIN)
        assert status_line.startswith(b"HTTP/1.1 200")
        writer.close()
        held[1][1].close()


async def test_a_client_waiting_at_the_cap_takes_a_slot_as_soon_as_a_connection_is_between_requests(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    limits = ConnectionLimits(max_connections=2, idle_timeout=60.0, body_timeout=60.0, handshake_timeout=60.0)
    async with running_webhook(tmp_path, SEED.tfjobs, limits=limits) as webhook:
        held = [await _open(ca, webhook.port) for _ in range(2)]
        head_end = REQUEST.index(b"\r\n\r\n") + 4
        for _, writer in held:
            writer.write(REQUEST[: head_end + 10])
        await asyncio.sleep(0.5)
        waiting = asyncio.create_task(_open(ca, webhook.port))
        await asyncio.sleep(1.0)
        assert not waiting.done(), "served over the cap while both connections were in a request"
        # The first one's request ends: it is between requests now, and makes room at once.
        reader, writer = held[0]
        writer.write(REQUEST[head_end + 10 :])
        status_line = await asyncio.wait_for(reader.readline(), CLOSED_WITHIN)
        assert status_line.startswith(b"HTTP/1.1 200")
        newcomer = await asyncio.wait_for(waiting, CLOSED_WITHIN)
        assert await _answer(*newcomer) == 200
        for _, closing in (*held, newcomer):
            closing.close()


async def test_at_the_cap_a_slow_head_makes_room_before_an_idle_connection(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    # Deadlines far beyond the test: any closing seen here is the cap's.
    limits = ConnectionLimits(max_connections=2, header_timeout=60.0, handshake_timeout=60.0)
    async with running_webhook(tmp_path, SEED.tfjobs, limits=limits) as webhook:
        idle = await _open(ca, webhook.port)
        slow = await _open(ca, webhook.port)
        slow[1].write(b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\n")
        await asyncio.sleep(0.5)
        assert not slow[0].at_eof() and not idle[0].at_eof(), "closed while nobody waited"
        reader, writer = await asyncio.wait_for(_open(ca, webhook.port), CLOSED_WITHIN)
        assert await _answer(reader, writer) == 200
        assert await _read_until_closed(slow[0]) == b""
        writer.close()
        # The idle connection, older than the slow one, was kept: it is served once a slot is free.
        assert await _answer(*idle) == 200
        for _, held in (idle, slow):
            held.close()


async def test_at_the_cap_a_connection_that_never_sent_a_request_makes_room_before_one_in_use(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    limits = ConnectionLimits(max_connections=2, idle_timeout=60.0, handshake_timeout=60.0)
    async with running_webhook(tmp_path, SEED.tfjobs, limits=limits) as webhook:
        in_use = await _open(ca, webhook.port)
        assert await _answer(*in_use) == 200
        only_connected = await _open(ca, webhook.port)
        reader, writer = await asyncio.wait_for(_open(ca, webhook.port), CLOSED_WITHIN)
        assert await _answer(reader, writer) == 200
        assert await _read_until_closed(only_connected[0]) == b""
        writer.close()
        # Then, with only clients in use between requests, the oldest idle one makes room.
        assert await _answer(*in_use) == 200
        newer = await asyncio.wait_for(_open(ca, webhook.port), CLOSED_WITHIN)
        assert await _answer(*newer) == 200
        reader, writer = await asyncio.wait_for(_open(ca, webhook.port), CLOSED_WITHIN)
        assert await _answer(reader, writer) == 200
        assert await _read_until_closed(in_use[0]) == b""
        assert await _answer(*newer) == 200
        for _, held in (in_use, only_connected, newer):
            held.close()
        writer.close()


def _handshake(port: int, version: ssl.TLSVersion) -> str:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_ciphers("DEFAULT:@SECLEVEL=0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = context.maximum_version = version
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        try:
            with context.wrap_socket(raw):
                return "connected"
        except ssl.SSLError as exc:
            return str(exc)


@pytest.mark.parametrize("version", ["TLSv1", "TLSv1_1"])
async def test_old_tls_gets_a_protocol_version_alert(
    ca: CertificateAuthority, tmp_path: Path, version: str
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        outcome = await asyncio.to_thread(_handshake, webhook.port, getattr(ssl.TLSVersion, version))
        # The webhook keeps serving others.
        reader, writer = await _open(ca, webhook.port)
        assert await _answer(reader, writer) == 200
        writer.close()
    assert "TLSV1_ALERT_PROTOCOL_VERSION" in outcome, outcome


async def test_tls_1_2_and_1_3_are_served(ca: CertificateAuthority, tmp_path: Path) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            context = client_context(ca)
            context.minimum_version = context.maximum_version = version
            reader, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=context)
            assert await _answer(reader, writer) == 200
            assert writer.get_extra_info("ssl_object").version() == version.name.replace("_", ".")
            writer.close()


async def test_large_bodies_in_flight_share_one_budget() -> None:
    budget = BodyBudget(10)
    order: list[str] = []

    async def read(name: str, size: int, hold: float) -> None:
        held = await budget.take(size)
        order.append(f"{name} in")
        await asyncio.sleep(hold)
        order.append(f"{name} out")
        budget.give_back(held)

    first = asyncio.create_task(read("big", 8, 0.2))
    await asyncio.sleep(0)
    # 8 of 10 held: a body of 5 waits, one of 2 goes ahead; a body over the budget takes it all.
    await asyncio.gather(read("medium", 5, 0), read("small", 2, 0), read("huge", 50, 0), first)
    assert order.index("small in") < order.index("big out") < order.index("medium in")
    assert order.index("big out") < order.index("huge in")


async def test_a_review_waits_for_the_body_budget_and_passes_once_a_slow_upload_is_cut_off(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    # One slow 4 MiB upload holds the whole budget: an ordinary review waits for it; the upload is
    # cut off at its body deadline, and the review (which came later) is answered after that.
    limits = ConnectionLimits(body_timeout=1.0, max_inflight_body_bytes=4 * 1024 * 1024)
    async with running_webhook(tmp_path, SEED.tfjobs, limits=limits) as webhook:
        hog_reader, hog_writer = await _open(ca, webhook.port)
        hog_writer.write(
            b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 4194304\r\n\r\n["
        )
        await asyncio.sleep(0.3)
        reader, writer = await _open(ca, webhook.port)
        sent = asyncio.get_running_loop().time()
        hog_answer, status = await asyncio.gather(_read_until_closed(hog_reader), _answer(reader, writer))
        waited = asyncio.get_running_loop().time() - sent
        for stream in (hog_writer, writer):
            stream.close()
    assert hog_answer.startswith(b"HTTP/1.1 408")
    assert status == 200
    # It could only be read once the upload's deadline (1 s after it began) had passed.
    assert waited >= 0.5


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_an_undecodable_content_encoding_is_a_quiet_400(
    ca: CertificateAuthority, tmp_path: Path, json_log: io.StringIO, encoding: str
) -> None:
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        reader, writer = await _open(ca, webhook.port)
        garbage = b"\x1f\x8b not compressed at all"
        writer.write(
            b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Encoding: {encoding}\r\nContent-Length: {len(garbage)}\r\n\r\n".encode()
            + garbage
        )
        answer = await _read_until_closed(reader)
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert json.loads(body)["message"].startswith("could not read the request body")
    records = [json.loads(line) for line in json_log.getvalue().splitlines()]
    assert all(record["level"] not in ("ERROR", "CRITICAL") for record in records), records
    assert all("exc_info" not in record for record in records), records


async def test_a_small_body_that_inflates_past_the_limit_is_refused_quietly(
    ca: CertificateAuthority, tmp_path: Path, json_log: io.StringIO
) -> None:
    bomb = gzip.compress(b"[" + b"0," * (3 * 1024 * 1024) + b"0]")  # ~6 MiB of JSON in ~6 KiB
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        reader, writer = await _open(ca, webhook.port)
        writer.write(
            b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Encoding: gzip\r\nContent-Length: {len(bomb)}\r\n\r\n".encode()
            + bomb
        )
        status_line = await asyncio.wait_for(reader.readline(), CLOSED_WITHIN)
        writer.close()
    assert status_line.startswith((b"HTTP/1.1 413", b"HTTP/1.1 400")), status_line
    records = [json.loads(line) for line in json_log.getvalue().splitlines()]
    assert all(record["level"] not in ("ERROR", "CRITICAL") for record in records), records
