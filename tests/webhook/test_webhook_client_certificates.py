"""With a client CA configured, only callers presenting a certificate it signed are served
(kube-apiserver can present one: see docs/deployment.md)."""

from __future__ import annotations

import asyncio
import datetime
import json
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from certs.authority import CertificateAuthority, new_ca
from certs.pem import InvalidCertificate, certificate_pem, new_private_key, private_key_pem
from tests.webhook.admission_cases import load_cases
from tests.webhook.webhook_harness import client_context, make_cert_dir, running_webhook
from webhook.config import parse_config
from webhook.tls import CertificateReloader

SEED = load_cases("mutate-seed-ps-0")[0]


def client_certificate(ca: CertificateAuthority, directory: Path) -> tuple[Path, Path]:
    """A clientAuth leaf for ``kube-apiserver``, as an admission kubeconfig would name it."""
    key = new_private_key()
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca.private_key, hashes.SHA256())
    )
    cert_file, key_file = directory / "client.crt", directory / "client.key"
    cert_file.write_bytes(certificate_pem(certificate))
    key_file.write_bytes(private_key_pem(key))
    return cert_file, key_file


async def _status(port: int, context: ssl.SSLContext) -> int | str:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
        body = json.dumps(SEED.review).encode()
        writer.write(
            b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        status_line = await asyncio.wait_for(reader.readline(), 10)
        writer.close()
    except (ssl.SSLError, ConnectionError) as exc:
        return type(exc).__name__
    return int(status_line.split()[1]) if status_line else "closed"


async def test_only_callers_with_a_certificate_from_the_client_ca_are_served(tmp_path: Path) -> None:
    server_ca = make_cert_dir(tmp_path)
    client_ca, stranger_ca = new_ca("apiserver-clients", valid_days=2), new_ca("stranger", valid_days=2)
    (tmp_path / "client-ca.crt").write_bytes(client_ca.cert_pem)
    (tmp_path / "ours").mkdir()
    (tmp_path / "theirs").mkdir()
    ours = client_certificate(client_ca, tmp_path / "ours")
    theirs = client_certificate(stranger_ca, tmp_path / "theirs")
    async with running_webhook(tmp_path, SEED.tfjobs, client_ca=tmp_path / "client-ca.crt") as webhook:
        with_ours, with_theirs, without = (client_context(server_ca) for _ in range(3))
        with_ours.load_cert_chain(*ours)
        with_theirs.load_cert_chain(*theirs)
        assert await _status(webhook.port, with_ours) == 200
        # TLS 1.3 reports a refused client certificate after the handshake, on the first read.
        assert await _status(webhook.port, with_theirs) in ("SSLError", "ConnectionResetError", "closed")
        assert await _status(webhook.port, without) in ("SSLError", "ConnectionResetError", "closed")
        assert await _status(webhook.port, with_ours) == 200


async def test_without_a_client_ca_any_caller_is_served(tmp_path: Path) -> None:
    server_ca = make_cert_dir(tmp_path)
    async with running_webhook(tmp_path, SEED.tfjobs) as webhook:
        assert await _status(webhook.port, client_context(server_ca)) == 200


def test_an_unreadable_client_ca_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("not a certificate")
    with pytest.raises(InvalidCertificate, match="cannot load the client CA"):
        CertificateReloader(tmp_path, client_ca=tmp_path / "ca.crt")
    config = parse_config(["--cert-dir", str(tmp_path)], {"TFGANG_CLIENT_CA": "/etc/ca.crt"})
    assert config.client_ca == "/etc/ca.crt"
