"""Fixtures for the operator's integration tests: one API server and one webhook process for the
whole session, a fresh namespace per test, and a dedicated user for the controller so the
request log tells its requests apart.

Every test runs three times: on the sandbox API server, on a real kube-apiserver v1.20 with etcd
(``realcluster.apiserver``; built by ``scripts/kube-apiserver`` on first use) and on
kube-apiserver v1.37 with the real Volcano (``realcluster.volcano``; built by
``scripts/real-components``). The marks ``sandbox_apiserver``, ``kube_apiserver`` and
``volcano_apiserver`` select one of them (``-m volcano_apiserver``).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from kube.resources import NAMESPACES
from kube.schema import CURRENT, V1_20, Release
from sandbox.backends import KUBE_APISERVER, SANDBOX, VOLCANO
from tests.apiservers import API_SERVERS, apply_api_server_marks

from .cluster import Cluster
from .leftovers import remove_jobs_and_gangs
from .operator import CONTROLLER_USER, WebhookHandle, running_webhook
from .rbac_audit import controller_requests, denied_requests


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    apply_api_server_marks(config, items, "apiserver")


@pytest.fixture(scope="session", params=API_SERVERS)
def apiserver(request: pytest.FixtureRequest) -> Iterator[Any]:
    with contextlib.ExitStack() as stack:
        if request.param == SANDBOX:
            from sandbox.testing import start_apiserver

            handle: Any = stack.enter_context(start_apiserver())
        elif request.param == VOLCANO:
            from realcluster.volcano import start_volcano_cluster

            handle = stack.enter_context(start_volcano_cluster())
        else:
            from realcluster.apiserver import start_real_apiserver

            handle = stack.enter_context(start_real_apiserver())
        yield handle
        # Once every integration test has run, whatever their order: the whole run's requests.
        denied = denied_requests(controller_requests(handle))
        assert denied == [], f"the controller made requests the chart's roles do not allow: {denied}"


@pytest.fixture
def release(request: pytest.FixtureRequest) -> Release:
    """Whose CRD validation answers the API server gives (``kube.schema``'s ``Release``): v1.20's
    on kube-apiserver v1.20, the current release's on the others (the sandbox imitates it)."""
    callspec = getattr(request.node, "callspec", None)
    server = callspec.params.get("apiserver") if callspec is not None else None
    return V1_20 if server == KUBE_APISERVER else CURRENT


@pytest.fixture(scope="session")
def webhook(apiserver: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookHandle]:
    with running_webhook(apiserver, tmp_path_factory.mktemp("webhook")) as handle:
        yield handle


@pytest.fixture(scope="session")
def controller_kubeconfig(apiserver: Any) -> str:
    """A kubeconfig for the controller's own user, ``tfgang-controller``."""
    _token, kubeconfig = apiserver.add_user(CONTROLLER_USER)
    return str(kubeconfig)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
async def cluster(apiserver: Any, webhook: WebhookHandle) -> AsyncIterator[Cluster]:
    """An admin client on a fresh namespace, with the webhook registered; the test's jobs,
    PodGroups and pods are removed afterwards (``leftovers``)."""
    namespace = f"it-{uuid.uuid4().hex[:8]}"
    async with Cluster.connect(str(apiserver.kubeconfig), namespace) as connected:
        await connected.api.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
        yield connected
        await remove_jobs_and_gangs(connected)
