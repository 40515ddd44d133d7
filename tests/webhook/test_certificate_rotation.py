"""Rotating the certificate files under a busy server: nothing fails, new connections get the new one."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import aiohttp
from cryptography import x509

from certs.authority import new_ca
from certs.files import write_cert_dir
from certs.pem import load_certificate
from certs.serving import ServingCertificate
from tests.webhook.admission_cases import load_cases
from tests.webhook.webhook_harness import client_context, loopback_certificate, make_cert_dir, running_webhook
from webhook.tls import CertificateReloader

CASE = load_cases("mutate-seed-ps-0")[0]


async def _presented_serial(port: int, context: ssl.SSLContext) -> int:
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        return x509.load_der_x509_certificate(der).serial_number
    finally:
        writer.close()
        await writer.wait_closed()


def _serial(serving: ServingCertificate) -> int:
    return load_certificate(serving.cert_pem).serial_number


async def test_rotation_under_load_fails_no_request(tmp_path: Path) -> None:
    ca = make_cert_dir(tmp_path)
    context = client_context(ca)
    results: list[int] = []
    stop = asyncio.Event()

    async def keep_alive_client(session: aiohttp.ClientSession, url: str) -> None:
        while not stop.is_set():
            async with session.post(url, json=CASE.review) as response:
                await response.read()
                results.append(response.status)

    async def fresh_connection_client(url: str) -> None:
        while not stop.is_set():
            async with (
                aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(ssl=context, force_close=True)
                ) as session,
                session.post(url, json=CASE.review) as response,
            ):
                await response.read()
                results.append(response.status)

    async with running_webhook(tmp_path, CASE.tfjobs) as webhook:
        watcher = asyncio.create_task(webhook.reloader.watch(0.01))
        url = webhook.url + "/mutate-pods"
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context, limit=4)) as session:
            clients = [asyncio.create_task(keep_alive_client(session, url)) for _ in range(3)]
            clients.append(asyncio.create_task(fresh_connection_client(url)))
            rotations = []
            for _ in range(5):
                await asyncio.sleep(0.1)
                serving = loopback_certificate(ca)
                # Written from another thread, so reloader polls interleave with half-done rotations.
                await asyncio.to_thread(write_cert_dir, tmp_path, serving)
                rotations.append(serving)
            await asyncio.sleep(0.2)
            stop.set()
            await asyncio.gather(*clients)
        presented = await _presented_serial(webhook.port, context)
        watcher.cancel()
    assert len(results) > 50
    assert set(results) == {200}
    assert presented == _serial(rotations[-1])
    assert webhook.reloader.reloads >= 2


async def test_a_mismatched_pair_keeps_the_old_certificate(tmp_path: Path) -> None:
    ca = make_cert_dir(tmp_path)
    context = client_context(ca)
    async with running_webhook(tmp_path, CASE.tfjobs) as webhook:
        before = await _presented_serial(webhook.port, context)
        other = loopback_certificate(ca)
        (tmp_path / "tls.crt").write_bytes(other.cert_pem)  # the key stays the old one
        assert not webhook.reloader.reload_if_changed()
        assert await _presented_serial(webhook.port, context) == before
        (tmp_path / "tls.key").write_bytes(other.key_pem)
        assert webhook.reloader.reload_if_changed()
        assert await _presented_serial(webhook.port, context) == _serial(other)


def test_reloader_waits_for_files_and_rejects_garbage(tmp_path: Path) -> None:
    reloaded: list[object] = []
    reloader = CertificateReloader(tmp_path, on_reload=reloaded.append)
    assert not reloader.reload_if_changed() and not reloader.loaded
    (tmp_path / "tls.crt").write_bytes(b"garbage")
    (tmp_path / "tls.key").write_bytes(b"garbage")
    assert not reloader.reload_if_changed() and not reloader.loaded
    serving = loopback_certificate(new_ca("ca"))
    write_cert_dir(tmp_path, serving)
    assert reloader.reload_if_changed() and reloader.loaded
    assert reloader.not_after == serving.not_after and reloaded == [serving.not_after]
    assert not reloader.reload_if_changed()  # unchanged files are not reloaded
