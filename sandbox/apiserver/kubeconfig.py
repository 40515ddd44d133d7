"""A kubeconfig that real kubectl and kubernetes_asyncio use: server, CA data, bearer token."""

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
) -> dict[str, object]:
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
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {"name": context, "context": {"cluster": cluster, "user": user, "namespace": namespace}}
        ],
        "current-context": context,
        "preferences": {},
    }


def write_kubeconfig(path: str, server: str, ca_pem: bytes, token: str, user: str = "admin") -> str:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    document = kubeconfig_document(server, ca_pem, token, user)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        yaml.safe_dump(document, handle, sort_keys=False)
    return path
