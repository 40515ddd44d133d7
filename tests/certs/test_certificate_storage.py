"""Certificates survive the round trip through a Secret and a certificate directory; expiry maths."""

from __future__ import annotations

import base64
import datetime
import stat
from pathlib import Path

import pytest

from certs.authority import new_ca
from certs.expiry import needs_renewal, not_after, seconds_until_expiry
from certs.files import CertificateFilesMissing, read_cert_dir, write_cert_dir
from certs.pem import InvalidCertificate
from certs.secret import decode_secret_data, encode_secret_data, secret_manifest
from certs.serving import issue_serving_certificate

NOW = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)


def test_secret_round_trip_with_and_without_the_ca_key() -> None:
    ca = new_ca("ca", now=NOW)
    serving = issue_serving_certificate(ca, ["svc"], now=NOW)
    data = encode_secret_data(serving)
    assert set(data) == {"tls.crt", "tls.key", "ca.crt"}
    assert base64.b64decode(data["tls.crt"]) == serving.cert_pem
    stored = decode_secret_data(data)
    assert stored.serving == serving and stored.ca is None
    with_ca = decode_secret_data(encode_secret_data(serving, ca))
    assert with_ca.ca is not None and with_ca.ca.key_pem == ca.key_pem


def test_secret_manifest_is_a_tls_secret() -> None:
    serving = issue_serving_certificate(new_ca("ca", now=NOW), ["svc"], now=NOW)
    manifest = secret_manifest("webhook-certs", "ns", serving, labels={"app": "x"})
    assert manifest["type"] == "kubernetes.io/tls"
    assert manifest["metadata"] == {"name": "webhook-certs", "namespace": "ns", "labels": {"app": "x"}}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (None, "no data"),
        ({"tls.crt": "", "tls.key": "x", "ca.crt": "x"}, "no tls.crt"),
        ({"tls.crt": "!!!", "tls.key": "eA==", "ca.crt": "eA=="}, "not valid base64"),
        ({"tls.crt": "eA==", "tls.key": "eA==", "ca.crt": "eA=="}, "no PEM certificate"),
    ],
)
def test_bad_secret_data_is_named(data: dict[str, str] | None, message: str) -> None:
    with pytest.raises(InvalidCertificate, match=message):
        decode_secret_data(data)


def test_cert_dir_round_trip_and_key_permissions(tmp_path: Path) -> None:
    serving = issue_serving_certificate(new_ca("ca", now=NOW), ["svc"], now=NOW)
    write_cert_dir(tmp_path / "certs", serving)
    assert read_cert_dir(tmp_path / "certs") == serving
    assert stat.S_IMODE((tmp_path / "certs" / "tls.key").stat().st_mode) == 0o600
    assert sorted(p.name for p in (tmp_path / "certs").iterdir()) == ["ca.crt", "tls.crt", "tls.key"]


def test_cert_dir_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CertificateFilesMissing, match=r"tls\.crt"):
        read_cert_dir(tmp_path)


def test_needs_renewal_before_expiry_with_margin_capped_by_lifetime() -> None:
    serving = issue_serving_certificate(new_ca("ca", now=NOW), ["svc"], valid_days=365, now=NOW)
    expiry = not_after(serving.cert_pem)
    assert not needs_renewal(serving.cert_pem, NOW)
    assert not needs_renewal(serving.cert_pem, expiry - datetime.timedelta(days=31))
    assert needs_renewal(serving.cert_pem, expiry - datetime.timedelta(days=29))
    assert needs_renewal(serving.cert_pem, expiry + datetime.timedelta(days=1))
    assert needs_renewal(
        serving.cert_pem, expiry - datetime.timedelta(days=100), before=datetime.timedelta(days=101)
    )
    short = issue_serving_certificate(new_ca("ca", now=NOW), ["svc"], valid_days=3, now=NOW)
    assert not needs_renewal(short.cert_pem, NOW)
    assert needs_renewal(short.cert_pem, NOW + datetime.timedelta(days=2, hours=1))
    assert seconds_until_expiry(short.cert_pem, NOW) == 3 * 86400
