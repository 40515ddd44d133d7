"""tfgang installed on the one-node cluster (``one_node``, tests/realnode/conftest.py) by the README's
commands, once for every test of this folder: ``tfgang`` is that release (``realcluster.helmrelease``).

Uninstalling ends the release the other tests use (this folder's and its subfolders'), so the
uninstall tests run last.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from kube.api import KubeApi
from kube.client import make_api_client
from realcluster.helmrelease import Images, Release
from realcluster.onenode import OneNode, find_images

# The seed replay's checks are shared with tests/sandbox/demo; let pytest explain their failures.
pytest.register_assert_rewrite("tests.sandbox.demo.fidelity_checks")

logger = logging.getLogger(__name__)

LAST = "test_uninstall"
"""Modules whose name starts so run after every other test here."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The uninstall tests after every other test of the session: they end the release that the
    tests of this folder and its subfolders (tensorflow/) share."""
    here = Path(__file__).parent
    last = [
        item
        for item in items
        if Path(str(item.path)).is_relative_to(here) and Path(str(item.path)).name.startswith(LAST)
    ]
    for item in last:
        items.remove(item)
    items.extend(last)


@pytest.fixture(scope="session")
def tfgang(one_node: OneNode, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Release]:
    components = one_node.node.components
    release = Release(
        helm=components / "bin" / "helm",
        kubectl=components / "bin" / "kubectl",
        kubeconfig=Path(one_node.kubeconfig),
        workdir=tmp_path_factory.mktemp("tfgang-release"),
        images=Images.read(one_node.node.images or find_images()),
    )
    release.install()
    logger.info("tfgang installed: %s", release.timings)
    yield release
    if release.installed:
        with contextlib.suppress(Exception):
            release.uninstall()


@pytest.fixture
async def node_api(one_node: OneNode) -> AsyncIterator[KubeApi]:
    """An admin client on the node's kube-apiserver (its kubeconfig's loopback port)."""
    api = KubeApi(await make_api_client(str(one_node.kubeconfig)), qps=1000.0, burst=1000)
    try:
        yield api
    finally:
        await api.close()
