"""Fixtures for the kube/ integration tests: the sandbox API server, a client, a fresh namespace."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from kube.api import KubeApi
from kube.client import make_api_client
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
