"""Pipelined reviews over real TLS: answered in order on one connection while the client is still
writing, and a client that writes but never reads its answers is cut off in bounded memory and time.

kube-apiserver sends one review at a time on a connection, but a proxy in front of the webhook may
pipeline. aiohttp parses at most 32 requests ahead of the one being answered and stops reading
past that; what it has answered waits in the transport, and a client that takes no answer for
``--header-timeout`` is aborted (``connections.HeaderDeadline``).
"""

from __future__ import annotations

import asyncio
import copy
import json
import ssl
from pathlib import Path

import pytest

from certs.authority import CertificateAuthority
from tests.webhook.admission_cases import load_cases
from tests.webhook.webhook_harness import client_context, make_cert_dir, running_webhook
from webhook.connections import ConnectionLimits

SEED = load_cases("mutate-seed-ps-0")[0]
PIPELINED = 50
# Generous: the machine is shared; what is asserted is that it happens, not how fast.
WITHIN = 30.0


@pytest.fixture
def ca(tmp_path: Path) -> CertificateAuthority:
    return make_cert_dir(tmp_path)


def _request(uid: str) -> bytes:
    review = copy.deepcopy(SEED.review)
    review["request"]["uid"] = uid
    body = json.dumps(review).encode()
    return (
        b"POST /mutate-pods HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, object]]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return int(head.split(b" ", 2)[1]), json.loads(await reader.readexactly(length))


async def test_pipelined_reviews_are_answered_in_order_while_the_client_writes(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    uids = [f"pipelined-{number:02d}" for number in range(PIPELINED)]
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        reader, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
        first_answer = asyncio.Event()

        async def write() -> None:
            # Most of the reviews at once (more than aiohttp parses ahead), the rest only once an
            # answer has come back: the server answers while the client is still writing.
            for uid in uids[:40]:
                writer.write(_request(uid))
                await writer.drain()
            await first_answer.wait()
            for uid in uids[40:]:
                writer.write(_request(uid))
                await writer.drain()

        async def read() -> list[str]:
            answered = []
            for _ in uids:
                status, review = await _read_answer(reader)
                first_answer.set()
                response = review["response"]
                assert status == 200 and isinstance(response, dict)
                assert response["allowed"] is True and response["patchType"] == "JSONPatch"
                answered.append(response["uid"])
            return answered

        try:
            _, answered = await asyncio.wait_for(asyncio.gather(write(), read()), WITHIN)
        finally:
            writer.close()
    assert answered == uids


async def test_a_client_that_writes_but_never_reads_is_cut_off(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    limits = ConnectionLimits(header_timeout=1.0, body_timeout=1.0)
    request = _request("never-read")
    # Far more than the buffers on the way hold: the kernel's socket buffers both ways (a few MiB
    # each, and the webhook answers requests until its answers fill them), TLS's, aiohttp's 32
    # parsed requests.
    attempted = 256 * 1024 * 1024
    async with running_webhook(tmp_path, SEED.tfjobs, limits=limits) as webhook:
        _, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=client_context(ca))
        sent = 0

        async def write_without_reading() -> None:
            nonlocal sent
            while sent < attempted:
                writer.write(request)
                await writer.drain()
                sent += len(request)

        try:
            with pytest.raises((ConnectionError, ssl.SSLError)):
                await asyncio.wait_for(write_without_reading(), WITHIN)
        finally:
            writer.close()
    # The webhook stopped taking requests long before the client was done, then cut it off.
    assert sent < attempted // 4
