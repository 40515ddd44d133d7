"""A kubeconfig that real kubectl and kubernetes_asyncio use: server, CA data, and a bearer token or
an X.509 client certificate."""

from __future__ import annotations

import base64
import os

import yaml


def kubeconfig_document(
    server: str,
    ca_pem: bytes,
    token: str,
    user: str = "admin",
    cluster: str = "tfgang-sandbox",
    namespace: str = "default",
    client_cert: tuple[bytes, bytes] | None = None,
) -> dict[str, object]:
    """``client_cert`` (certificate and key PEM) authenticates instead of ``token``."""
    credentials = {"token": token}
    if client_cert is not None:
        credentials = {
            "client-certificate-data": base64.b64encode(client_cert[0]).decode(),
            "client-key-data": base64.b64encode(client_cert[1]).decode(),
        }
    context = f"{user}@{cluster}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [
            {"name": context, "context": {"cluster": cluster, "user": user, "namespace": namespace}}
        ],
        "current-context": context,
        "preferences": {},
    }


def write_kubeconfig(
    path: str,
    server: str,
    ca_pem: bytes,
    token: str,
    user: str = "admin",
    client_cert: tuple[bytes, bytes] | None = None,
) -> str:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    document = kubeconfig_document(server, ca_pem, token, user, client_cert=client_cert)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        yaml.safe_dump(document, handle, sort_keys=False)
    return path
