"""A sandbox API server for the controller's component tests (one for the session)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from kube.api import KubeApi
from kube.client import make_api_client


@pytest.fixture(scope="session")
def apiserver() -> Iterator[Any]:
    from sandbox.testing import start_apiserver

    with start_apiserver() as handle:
        yield handle


@pytest.fixture
async def api(apiserver: Any) -> AsyncIterator[KubeApi]:
    client = await make_api_client(apiserver.kubeconfig)
    kube = KubeApi(client, qps=1000.0, burst=1000)
    try:
        yield kube
    finally:
        await kube.close()
