"""Parsing PEM material into cryptography objects, with one error type for all bad input."""

from __future__ import annotations

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

# The key types tfgang issues (EC) or accepts from someone else's CA (RSA).
SigningKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey

_PEM_CERT_MARKER = b"-----BEGIN CERTIFICATE-----"


class InvalidCertificate(ValueError):
    """PEM data that is not a usable certificate or private key."""


def load_certificate(cert_pem: bytes) -> x509.Certificate:
    """The first certificate in ``cert_pem``."""
    certificates = load_certificates(cert_pem)
    return certificates[0]


def load_certificates(bundle_pem: bytes) -> list[x509.Certificate]:
    """Every certificate in a PEM bundle, in order; at least one."""
    if _PEM_CERT_MARKER not in bundle_pem:
        raise InvalidCertificate("no PEM certificate found")
    try:
        certificates = x509.load_pem_x509_certificates(bundle_pem)
    except ValueError as exc:
        raise InvalidCertificate(f"unreadable PEM certificate: {exc}") from exc
    return certificates


def load_private_key(key_pem: bytes) -> SigningKey:
    try:
        key: PrivateKeyTypes = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError) as exc:
        raise InvalidCertificate(f"unreadable PEM private key: {exc}") from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise InvalidCertificate(f"unsupported private key type {type(key).__name__}")
    return key


def certificate_pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def private_key_pem(key: SigningKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def new_private_key() -> ec.EllipticCurvePrivateKey:
    # P-256: fast to generate and to handshake with, accepted by Go's crypto/tls and OpenSSL.
    return ec.generate_private_key(ec.SECP256R1())


def key_matches_certificate(key: SigningKey, certificate: x509.Certificate) -> bool:
    spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return key.public_key().public_bytes(*spki) == certificate.public_key().public_bytes(*spki)
