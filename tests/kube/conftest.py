"""Fixtures for the kube/ integration tests: the sandbox API server, a client, a fresh namespace."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube.api import KubeApi
from kube.client import KubeClient, make_api_client
from kube.resources import NAMESPACES
from sandbox.testing import start_apiserver


@pytest.fixture(scope="session")
def sandbox_apiserver() -> Iterator[Any]:
    with start_apiserver() as handle:
        yield handle


@contextlib.asynccontextmanager
async def connect(handle: Any, **kwargs: Any) -> AsyncIterator[KubeApi]:
    api = KubeApi(await make_api_client(str(handle.kubeconfig)), **kwargs)
    try:
        yield api
    finally:
        await api.close()


@pytest.fixture
async def kube_api(sandbox_apiserver: Any) -> AsyncIterator[KubeApi]:
    async with connect(sandbox_apiserver, qps=0) as api:
        yield api


@pytest.fixture
async def namespace(kube_api: KubeApi) -> str:
    name = f"kube-{uuid.uuid4().hex[:8]}"
    await kube_api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def kubeconfig_file(path: Path, server: str, ca_pem: bytes, user: dict[str, Any], **cluster: Any) -> str:
    """A kubeconfig at ``path``: one cluster (its CA beside it in ``ca.crt``), one user, one context."""
    document: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    if ca_pem:
        (path.parent / "ca.crt").write_bytes(ca_pem)
        document["clusters"][0]["cluster"].setdefault("certificate-authority", str(path.parent / "ca.crt"))
    path.write_text(yaml.safe_dump(document))
    return str(path)


async def client_for(directory: Path, server: str, *, token: str = "", ca_pem: bytes = b"") -> KubeClient:
    """A client of ``server`` made as the operator makes one, from a kubeconfig written to ``directory``."""
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    user = {"token": token} if token else {}
    return await make_api_client(kubeconfig_file(directory / "kubeconfig", server, ca_pem, user))
