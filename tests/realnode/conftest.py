"""The one-node cluster for the tests of this folder and below (mark ``real_node``): started once
per session from ``$TFGANG_REAL_COMPONENTS`` and ``$TFGANG_REAL_IMAGES`` (built by the scripts when
unset; a build that fails or lacks a component fails the tests, it never skips them). tfgang
installed on it is ``tests/realnode/installed/``'s ``tfgang`` release."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from realcluster.onenode import OneNode, find_images, start_one_node
from realcluster.volcano import find_components


@pytest.fixture(scope="session")
def one_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OneNode]:
    components, images = find_components(), find_images()
    with start_one_node(components, images, tmp_path_factory.mktemp("one-node")) as node:
        yield node
