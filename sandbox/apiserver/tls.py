"""The API server's serving certificate: a throwaway CA and a leaf for 127.0.0.1 and localhost."""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass

from certs.authority import new_ca
from certs.serving import issue_serving_certificate


@dataclass(frozen=True)
class ServingMaterial:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


def new_serving_material() -> ServingMaterial:
    authority = new_ca("tfgang-sandbox-apiserver-ca")
    leaf = issue_serving_certificate(authority, ["localhost"], ip_addresses=["127.0.0.1"])
    return ServingMaterial(authority.cert_pem, leaf.cert_pem, leaf.key_pem)


def server_ssl_context(material: ServingMaterial) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory(prefix="tfgang-apiserver-tls-") as directory:
        cert_path = os.path.join(directory, "tls.crt")
        key_path = os.path.join(directory, "tls.key")
        with open(cert_path, "wb") as cert_file:
            cert_file.write(material.cert_pem)
        with open(key_path, "wb") as key_file:
            key_file.write(material.key_pem)
        context.load_cert_chain(cert_path, key_path)
    return context
