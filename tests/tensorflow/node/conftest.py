"""The TensorFlow example on the one-node cluster (mark ``tensorflow``): the node and the tfgang
release are the real-node suite's own fixtures (tests/realnode), reused here, not made again; the
example's image is built (or reused, cached by a hash of examples/tensorflow/) and imported once.

The offline tests (``tests/tensorflow/test_example_offline.py``) need none of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from realcluster.onenode import OneNode
from sandbox.helmrelease import Release

from tests.realnode.conftest import one_node
from tests.realnode.installed.conftest import tfgang

from ..onnode import Cluster, image_archive, image_folder

__all__ = ["one_node", "tfgang"]  # the real-node fixtures, visible to this folder's tests


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "tensorflow: the TensorFlow example on the one-node cluster (tests/tensorflow)"
    )


@pytest.fixture(scope="session")
def example_cluster(one_node: OneNode, tfgang: Release) -> Cluster:
    """tfgang installed on the node, and the example's image on it (never pulled)."""
    archive, name = image_archive(image_folder())
    one_node.import_image(archive, name)
    return Cluster(one_node.node.components / "bin" / "kubectl", one_node.kubeconfig)


@pytest.fixture
def checkpoints(one_node: OneNode, request: pytest.FixtureRequest) -> Path:
    """A checkpoint folder of this test on the node's host (the example's hostPath, moved here)."""
    folder = one_node.workdir / "tensorflow-checkpoints" / request.node.name.replace("[", "-").rstrip("]")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
