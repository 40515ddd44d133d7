"""The TensorFlow example on the one-node cluster (mark ``tensorflow``), on the node (``one_node``)
and the tfgang release (``tfgang``) of the folders above; the example's image is built (or reused,
cached by a hash of examples/tensorflow/) and imported once. The helpers and the offline tests of
the example are in tests/tensorflow/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from realcluster.helmrelease import Release
from realcluster.onenode import OneNode
from tests.tensorflow.onnode import Cluster, image_archive, image_folder


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
