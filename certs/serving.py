"""Serving certificates for a webhook Service, signed by a ``CertificateAuthority``."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from certs.authority import CertificateAuthority, certificate_builder
from certs.pem import (
    InvalidCertificate,
    certificate_pem,
    key_matches_certificate,
    load_certificate,
    load_certificates,
    load_private_key,
    new_private_key,
    private_key_pem,
)


@dataclass(frozen=True)
class ServingCertificate:
    cert_pem: bytes
    key_pem: bytes
    # The CA certificate(s) that clients trust: one PEM, or several during a CA rotation.
    ca_pem: bytes
    not_after: datetime.datetime


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The names the API server may dial for a Service: ``svc``, ``svc.ns``, ``svc.ns.svc``."""
    if not service or not namespace:
        raise ValueError("service and namespace must both be non-empty")
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc"]


def issue_serving_certificate(
    ca: CertificateAuthority,
    dns_names: Sequence[str],
    *,
    ip_addresses: Sequence[str] = (),
    valid_days: int = 365,
    now: datetime.datetime | None = None,
) -> ServingCertificate:
    """A leaf for TLS servers: SANs, AKI from the CA, KeyUsage digitalSignature, EKU serverAuth."""
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    if valid_days < 1:
        raise ValueError(f"valid_days must be at least 1, got {valid_days}")
    try:
        ips = [ipaddress.ip_address(address) for address in ip_addresses]
    except ValueError as exc:
        raise ValueError(f"invalid IP address in {list(ip_addresses)}: {exc}") from exc
    issued_at = now or datetime.datetime.now(datetime.UTC)
    ca_certificate = ca.certificate
    ca_key = ca.private_key
    key = new_private_key()
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    sans += [x509.IPAddress(ip) for ip in ips]
    # Never outlive the CA: a leaf valid past its issuer fails verification at that point anyway.
    not_after = min(issued_at + datetime.timedelta(days=valid_days), ca_certificate.not_valid_after_utc)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, (list(dns_names) or [str(ips[0])])[0])])
    certificate = (
        certificate_builder(subject, ca_certificate.subject, key.public_key(), issued_at, not_after, ca=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return ServingCertificate(
        cert_pem=certificate_pem(certificate),
        key_pem=private_key_pem(key),
        ca_pem=ca.cert_pem,
        not_after=certificate.not_valid_after_utc,
    )


def serving_certificate_from_pem(cert_pem: bytes, key_pem: bytes, ca_pem: bytes) -> ServingCertificate:
    """Stored material checked for consistency: parsable, and the key belongs to the certificate."""
    certificate = load_certificate(cert_pem)
    key = load_private_key(key_pem)
    load_certificates(ca_pem)
    if not key_matches_certificate(key, certificate):
        raise InvalidCertificate("tls.key does not match tls.crt")
    return ServingCertificate(
        cert_pem=cert_pem, key_pem=key_pem, ca_pem=ca_pem, not_after=certificate.not_valid_after_utc
    )


def dns_names_of(cert_pem: bytes) -> list[str]:
    """The DNS SANs of a certificate (empty when it has none)."""
    certificate = load_certificate(cert_pem)
    try:
        sans = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return list(sans.get_values_for_type(x509.DNSName))
