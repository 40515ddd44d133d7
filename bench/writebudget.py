"""Write budget and condition latency with a kubelet that starts and stops pods at different moments.

Used by ``bench/controller.py``: ``measure`` runs job lifecycles one after another in a namespace
of their own (``tests/integration/staggered.py`` plays Volcano and the staggered kubelet) and
counts the controller's writes in the sandbox's request log; ``rows`` renders the table rows.
"""

from __future__ import annotations

import random
import statistics
from typing import Any

from kube.api import KubeApi
from kube.resources import NAMESPACES
from tests.integration.cluster import Cluster, controller_writes, status_writes
from tests.integration.staggered import staggered_lifecycle

NAMESPACE = "write-budget"


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


async def measure(
    api: KubeApi, apiserver: Any, user: str, lifecycles: int = 20, seed: int = 12
) -> dict[str, Any]:
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    cluster = Cluster(api, NAMESPACE)
    rng = random.Random(seed)
    done = [await staggered_lifecycle(cluster, f"budget-{index:03d}", rng) for index in range(lifecycles)]
    writes = controller_writes(apiserver, user, NAMESPACE)
    status = [len([r for r in status_writes(writes) if r.name == lifecycle.job]) for lifecycle in done]
    latencies = [latency for lifecycle in done for latency in lifecycle.condition_latencies]
    replicas = done[0].pods
    return {
        "lifecycles": lifecycles,
        "replicas": replicas,
        "writes_per_lifecycle": len(writes) / lifecycles,
        "status_writes_max": max(status),
        "status_writes_mean": statistics.mean(status),
        "condition_p50_ms": statistics.median(latencies) * 1000,
        "condition_p99_ms": _percentile(latencies, 0.99) * 1000,
        "condition_ms": sorted(round(latency * 1000) for latency in latencies),
    }


def rows(result: dict[str, Any]) -> list[str]:
    budget = 2 * result["replicas"] + 6
    return [
        f"| writes per lifecycle, pods started and stopped 50-250 ms apart ({result['lifecycles']} jobs) | "
        f"{result['writes_per_lifecycle']:.1f} | <= 2R+6 = {budget} |",
        f"| of which status writes, mean (max) | {result['status_writes_mean']:.1f} "
        f"({result['status_writes_max']}) | <= 4 |",
        f"| staggered pods: pod change -> new condition, p50 / p99 | {result['condition_p50_ms']:.0f} ms / "
        f"{result['condition_p99_ms']:.0f} ms | p99 <= 100 ms |",
    ]
