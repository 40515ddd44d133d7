"""One local cluster with the operator, shared by this folder's tests (a start costs seconds)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox.cluster import ClusterHandle, ClusterOptions, start_cluster

THREE_SMALL_NODES = "las1:cpu=2500m,memory=8Gi;las2:cpu=2500m,memory=8Gi;las3:cpu=2500m,memory=8Gi"
"""7.5 cpu in all: room for the gang tests' arithmetic (see test_gang_end_to_end.py)."""


@pytest.fixture(scope="session")
def operator_cluster() -> Iterator[ClusterHandle]:
    with start_cluster(ClusterOptions(nodes=THREE_SMALL_NODES, operator=True)) as handle:
        yield handle
