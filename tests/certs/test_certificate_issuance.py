"""The CA and serving certificates verify like a strict TLS client expects (cryptography's verifier)."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.x509 import verification
from cryptography.x509.oid import ExtendedKeyUsageOID

from certs.authority import load_ca, new_ca
from certs.pem import InvalidCertificate, load_certificate
from certs.serving import (
    dns_names_of,
    issue_serving_certificate,
    service_dns_names,
    serving_certificate_from_pem,
)

NOW = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)


def _verify(ca_pem: bytes, cert_pem: bytes, host: str, now: datetime.datetime = NOW) -> None:
    store = verification.Store([load_certificate(ca_pem)])
    verifier = verification.PolicyBuilder().store(store).time(now).build_server_verifier(x509.DNSName(host))
    verifier.verify(load_certificate(cert_pem), [])


def test_service_dns_names_are_the_three_names_the_api_server_dials() -> None:
    assert service_dns_names("tfgang-webhook", "kubeflow") == [
        "tfgang-webhook",
        "tfgang-webhook.kubeflow",
        "tfgang-webhook.kubeflow.svc",
    ]


def test_service_dns_names_rejects_empty_parts() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        service_dns_names("", "ns")


@pytest.mark.parametrize("host", ["svc", "svc.ns", "svc.ns.svc"])
def test_serving_certificate_verifies_for_each_service_name(host: str) -> None:
    ca = new_ca("test-ca", now=NOW)
    serving = issue_serving_certificate(ca, service_dns_names("svc", "ns"), now=NOW)
    _verify(serving.ca_pem, serving.cert_pem, host)


def test_serving_certificate_fails_for_another_host() -> None:
    ca = new_ca("test-ca", now=NOW)
    serving = issue_serving_certificate(ca, service_dns_names("svc", "ns"), now=NOW)
    with pytest.raises(verification.VerificationError):
        _verify(serving.ca_pem, serving.cert_pem, "other.ns.svc")


def test_serving_certificate_fails_under_another_ca() -> None:
    serving = issue_serving_certificate(new_ca("a", now=NOW), ["svc"], now=NOW)
    with pytest.raises(verification.VerificationError):
        _verify(new_ca("b", now=NOW).cert_pem, serving.cert_pem, "svc")


def test_serving_certificate_is_not_valid_after_its_lifetime() -> None:
    serving = issue_serving_certificate(new_ca("a", now=NOW), ["svc"], valid_days=1, now=NOW)
    with pytest.raises(verification.VerificationError):
        _verify(serving.ca_pem, serving.cert_pem, "svc", now=NOW + datetime.timedelta(days=2))


def test_serving_certificate_extensions() -> None:
    ca = new_ca("test-ca", now=NOW)
    serving = issue_serving_certificate(ca, ["svc"], ip_addresses=["127.0.0.1"], now=NOW)
    certificate = load_certificate(serving.cert_pem)
    extensions = certificate.extensions
    assert extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == x509.ExtendedKeyUsage(
        [ExtendedKeyUsageOID.SERVER_AUTH]
    )
    assert extensions.get_extension_for_class(x509.KeyUsage).value.digital_signature
    assert not extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    aki = extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    ski = load_certificate(ca.cert_pem).extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    assert aki.key_identifier == ski.digest
    sans = extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert dns_names_of(serving.cert_pem) == ["svc"]
    assert serving.not_after == NOW + datetime.timedelta(days=365)


def test_ca_extensions() -> None:
    ca = new_ca("test-ca", valid_days=10, now=NOW)
    certificate = load_certificate(ca.cert_pem)
    constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical and constraints.value.ca and constraints.value.path_length == 0
    usage = certificate.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.key_cert_sign and usage.crl_sign
    assert ca.not_after == NOW + datetime.timedelta(days=10)


def test_serving_certificate_never_outlives_its_ca() -> None:
    ca = new_ca("short", valid_days=5, now=NOW)
    serving = issue_serving_certificate(ca, ["svc"], valid_days=365, now=NOW)
    assert serving.not_after == ca.not_after


def test_load_ca_round_trips_and_rejects_a_leaf_or_a_foreign_key() -> None:
    ca = new_ca("test-ca", now=NOW)
    assert load_ca(ca.cert_pem, ca.key_pem).cert_pem == ca.cert_pem
    serving = issue_serving_certificate(ca, ["svc"], now=NOW)
    with pytest.raises(InvalidCertificate, match="not a CA"):
        load_ca(serving.cert_pem, serving.key_pem)
    with pytest.raises(InvalidCertificate, match="does not match"):
        load_ca(ca.cert_pem, new_ca("other", now=NOW).key_pem)


def test_stored_material_is_checked() -> None:
    ca = new_ca("test-ca", now=NOW)
    one = issue_serving_certificate(ca, ["svc"], now=NOW)
    two = issue_serving_certificate(ca, ["svc"], now=NOW)
    assert serving_certificate_from_pem(one.cert_pem, one.key_pem, one.ca_pem) == one
    with pytest.raises(InvalidCertificate, match="does not match"):
        serving_certificate_from_pem(one.cert_pem, two.key_pem, one.ca_pem)
    with pytest.raises(InvalidCertificate, match="no PEM certificate"):
        serving_certificate_from_pem(b"garbage", one.key_pem, one.ca_pem)
    with pytest.raises(InvalidCertificate, match="private key"):
        serving_certificate_from_pem(one.cert_pem, b"garbage", one.ca_pem)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dns_names": []}, "at least one"),
        ({"dns_names": ["svc"], "valid_days": 0}, "valid_days"),
        ({"dns_names": ["svc"], "ip_addresses": ["not-an-ip"]}, "invalid IP"),
    ],
)
def test_bad_requests_are_clear_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        issue_serving_certificate(new_ca("a", now=NOW), **kwargs)  # type: ignore[arg-type]
