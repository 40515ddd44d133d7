"""The write budget holds when the kubelet starts and stops a job's pods at different moments:
at most 2R+6 writes to the job's objects per lifecycle, at most four of them status writes, and
no condition transition waits for the counts that are held back."""

from __future__ import annotations

import random
from typing import Any

from .cluster import Cluster, controller_writes, status_writes
from .operator import CONTROLLER_USER, controller_config, running_controller
from .staggered import staggered_lifecycle


async def test_staggered_pods_cost_at_most_2r_plus_6_writes_and_4_status_writes(
    cluster: Cluster, controller_kubeconfig: str, apiserver: Any
) -> None:
    ns = cluster.namespace
    rng = random.Random(12)
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        lifecycles = [await staggered_lifecycle(cluster, f"stagger-{index}", rng) for index in range(3)]
    writes = controller_writes(apiserver, CONTROLLER_USER, ns)
    replicas = lifecycles[0].pods
    summary = [(r.verb, r.resource, r.subresource, r.name) for r in writes]
    # Creates name no object in their URL, so the budget is checked over the three lifecycles.
    assert sum(r.verb == "create" for r in writes) == len(lifecycles) * (2 * replicas + 1), summary
    assert len(writes) <= len(lifecycles) * (2 * replicas + 6), summary
    for lifecycle in lifecycles:
        status = [r for r in status_writes(writes) if r.name == lifecycle.job]
        assert len(status) <= 4, (lifecycle.job, summary)
        # The conditions were not held back with the counts.
        assert max(lifecycle.condition_latencies) < 1.0, lifecycle
