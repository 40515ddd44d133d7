"""Certificates in a Kubernetes Secret: ``tls.crt``, ``tls.key``, ``ca.crt`` (and our ``ca.key``).

The three standard keys are what cert-manager writes and what ``kubernetes.io/tls`` Secrets mounted
as files give the webhook. ``ca.key`` is tfgang's own: with it, a self-managed webhook renews its
serving certificate under the same CA, so the ``caBundle`` the API server trusts does not change.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from certs.authority import CertificateAuthority, load_ca
from certs.pem import InvalidCertificate
from certs.serving import ServingCertificate, serving_certificate_from_pem

TLS_CERT_KEY = "tls.crt"
TLS_PRIVATE_KEY_KEY = "tls.key"
CA_CERT_KEY = "ca.crt"
CA_PRIVATE_KEY_KEY = "ca.key"
SECRET_TYPE_TLS = "kubernetes.io/tls"


@dataclass(frozen=True)
class StoredCertificates:
    serving: ServingCertificate
    # Present only when the Secret was written by a self-managed webhook.
    ca: CertificateAuthority | None


def encode_secret_data(serving: ServingCertificate, ca: CertificateAuthority | None = None) -> dict[str, str]:
    """The Secret's ``data`` map (base64 values)."""
    raw = {
        TLS_CERT_KEY: serving.cert_pem,
        TLS_PRIVATE_KEY_KEY: serving.key_pem,
        CA_CERT_KEY: serving.ca_pem,
    }
    if ca is not None:
        raw[CA_PRIVATE_KEY_KEY] = ca.key_pem
    return {key: base64.b64encode(value).decode("ascii") for key, value in raw.items()}


def secret_manifest(
    name: str,
    namespace: str,
    serving: ServingCertificate,
    ca: CertificateAuthority | None = None,
    *,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": SECRET_TYPE_TLS,
        "data": encode_secret_data(serving, ca),
    }


def decode_secret_data(data: Mapping[str, Any] | None) -> StoredCertificates:
    """Checked certificates from a Secret's ``data``; ``InvalidCertificate`` names what is wrong."""
    if not data:
        raise InvalidCertificate("the Secret has no data")
    pems = {key: _decode(data, key) for key in (TLS_CERT_KEY, TLS_PRIVATE_KEY_KEY, CA_CERT_KEY)}
    serving = serving_certificate_from_pem(pems[TLS_CERT_KEY], pems[TLS_PRIVATE_KEY_KEY], pems[CA_CERT_KEY])
    ca = None
    if data.get(CA_PRIVATE_KEY_KEY):
        # The current CA is the first certificate of ca.crt; older ones follow during a rotation.
        ca = load_ca(serving.ca_pem, _decode(data, CA_PRIVATE_KEY_KEY))
    return StoredCertificates(serving=serving, ca=ca)


def _decode(data: Mapping[str, Any], key: str) -> bytes:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidCertificate(f"the Secret has no {key}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidCertificate(f"the Secret's {key} is not valid base64: {exc}") from exc
