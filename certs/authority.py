"""A self-signed certificate authority that signs the webhook's serving certificates."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from cryptography.x509.oid import NameOID

from certs.pem import (
    InvalidCertificate,
    SigningKey,
    certificate_pem,
    key_matches_certificate,
    load_certificate,
    load_private_key,
    new_private_key,
    private_key_pem,
)

# Certificates start this long before "now" so a peer whose clock lags still accepts them.
CLOCK_SKEW = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class CertificateAuthority:
    cert_pem: bytes
    key_pem: bytes
    not_after: datetime.datetime

    @property
    def certificate(self) -> x509.Certificate:
        return load_certificate(self.cert_pem)

    @property
    def private_key(self) -> SigningKey:
        return load_private_key(self.key_pem)


def certificate_builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: CertificatePublicKeyTypes,
    issued_at: datetime.datetime,
    not_after: datetime.datetime,
    *,
    ca: bool,
) -> x509.CertificateBuilder:
    """What the CA and the serving certificate share: names, key, validity (backdated by the clock
    skew), a fresh serial, BasicConstraints and a KeyUsage that signs certificates only for a CA."""
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(issued_at - CLOCK_SKEW)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=ca,
                crl_sign=ca,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )


def new_ca(
    common_name: str, *, valid_days: int = 3650, now: datetime.datetime | None = None
) -> CertificateAuthority:
    """A fresh CA: BasicConstraints CA (path length 0), KeyUsage certSign/crlSign, a key identifier."""
    if valid_days < 1:
        raise ValueError(f"valid_days must be at least 1, got {valid_days}")
    if not common_name:
        raise ValueError("the CA needs a common name")
    issued_at = now or datetime.datetime.now(datetime.UTC)
    key = new_private_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    not_after = issued_at + datetime.timedelta(days=valid_days)
    certificate = (
        certificate_builder(name, name, key.public_key(), issued_at, not_after, ca=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertificateAuthority(
        cert_pem=certificate_pem(certificate),
        key_pem=private_key_pem(key),
        not_after=certificate.not_valid_after_utc,
    )


def load_ca(cert_pem: bytes, key_pem: bytes) -> CertificateAuthority:
    """A CA from stored PEM; the certificate must be a CA and match the key."""
    certificate = load_certificate(cert_pem)
    key = load_private_key(key_pem)
    try:
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        raise InvalidCertificate("the CA certificate has no BasicConstraints extension") from None
    if not constraints.ca:
        raise InvalidCertificate("the certificate is not a CA")
    if not key_matches_certificate(key, certificate):
        raise InvalidCertificate("the CA private key does not match the CA certificate")
    return CertificateAuthority(
        cert_pem=certificate_pem(certificate), key_pem=key_pem, not_after=certificate.not_valid_after_utc
    )
