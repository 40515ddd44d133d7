"""A job's lifecycle with a kubelet that starts and stops its pods at different moments.

``staggered_lifecycle`` plays Volcano (PodGroup -> Inqueue) and a kubelet that runs the pods one
after another, ``gap`` seconds apart in a random order, and later finishes the workers the same
way, worker 0 last. It watches the job and returns, per condition transition, the seconds from
the pod change that caused it to the moment the watch showed it; the caller counts the writes in
the request log. Shared by the write-budget test and ``bench/controller.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from dataclasses import dataclass
from typing import Any

from controller.resources import TFJOBS

from .cluster import Cluster, admit_and_wait_for_pods, container_status, eventually, simple_job


@dataclass(frozen=True)
class Lifecycle:
    job: str
    pods: int
    condition_latencies: tuple[float, ...]
    """Seconds from the pod change that caused Running (the first worker running), then Succeeded
    (worker 0 finished), to the watch showing it."""


def _condition_types(job: dict[str, Any]) -> tuple[str, ...]:
    conditions = (job.get("status") or {}).get("conditions") or ()
    return tuple(str(c.get("type")) for c in conditions if c.get("status") == "True")


async def staggered_lifecycle(
    cluster: Cluster, name: str, rng: random.Random, gap: tuple[float, float] = (0.05, 0.25)
) -> Lifecycle:
    """One job of 1 PS + 3 workers from creation to Succeeded, its pods changing ``gap`` apart."""
    seen: dict[str, float] = {}
    _, version = await cluster.api.list_all(TFJOBS, cluster.namespace)

    async def follow() -> None:
        async for event in cluster.api.watch(
            TFJOBS, cluster.namespace, resource_version=version, timeout_seconds=300
        ):
            if (event.object.get("metadata") or {}).get("name") == name:
                for kind in _condition_types(event.object):
                    seen.setdefault(kind, time.monotonic())

    watcher = asyncio.create_task(follow())
    try:
        await cluster.create_job(simple_job(name, cluster.namespace, workers=3, ps=1))
        pods = await admit_and_wait_for_pods(cluster, name, 4, within=30)
        latencies = []
        order = rng.sample(pods, len(pods))
        first_running = 0.0
        for pod in order:
            await cluster.set_pod(pod, "Running", container_status("running"))
            # A TFJob without a chief is Running once a worker runs (a PS alone is not enough).
            if not first_running and "-worker-" in pod:
                first_running = time.monotonic()
            await asyncio.sleep(rng.uniform(*gap))
        await eventually(lambda: _seen(seen, "Running"), within=30, what=f"{name} Running")
        latencies.append(seen["Running"] - first_running)
        workers = sorted(p for p in pods if "-worker-" in p)
        finishing = [*rng.sample(workers[1:], len(workers) - 1), workers[0]]
        last_change = 0.0
        for index, pod in enumerate(finishing):
            if index:
                await asyncio.sleep(rng.uniform(*gap))
            await cluster.set_pod(pod, "Succeeded", container_status("terminated"))
            last_change = time.monotonic()
        await eventually(lambda: _seen(seen, "Succeeded"), within=30, what=f"{name} Succeeded")
        latencies.append(seen["Succeeded"] - last_change)
        return Lifecycle(name, len(pods), tuple(latencies))
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def _seen(seen: dict[str, float], kind: str) -> bool:
    return kind in seen
