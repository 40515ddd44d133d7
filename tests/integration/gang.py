"""The sandbox's Volcano-like gang scheduler for integration tests, with nodes of the test's choice.

Most integration tests play Volcano by writing PodGroup phases themselves; the tests of what the
TFJob says about a waiting gang need Volcano's own words, so they run the real scheduler
(``sandbox.scheduler``) in-process against the session's API server, on nodes registered here
(no kubelet: bound pods stay Pending, which is all these tests need).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from kube.api import KubeApi
from kube.client import make_api_client
from kube.errors import NotFound
from kube.events import EventRecorder
from kube.patches import PatchType
from kube.resources import NODES
from sandbox.scheduler.runner import Scheduler, SchedulerOptions

# Big enough that what earlier tests left behind in their namespaces never crowds these tests out.
ROOMY = {"cpu": "1000", "memory": "4000Gi", "pods": "1000"}


def node(
    name: str, *, taints: Sequence[dict[str, str]] = (), labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": list(taints)},
    }


@contextlib.asynccontextmanager
async def gang_scheduler(kubeconfig: str, nodes: Sequence[dict[str, Any]]) -> AsyncIterator[KubeApi]:
    """Register ``nodes`` (Ready, roomy) and run the gang scheduler until the block ends."""
    api = KubeApi(await make_api_client(kubeconfig), qps=1000.0, burst=1000)
    recorder = EventRecorder(api, "volcano")
    names = [str(n["metadata"]["name"]) for n in nodes]
    for body in nodes:
        await api.create(NODES, dict(body))
        status = {
            "capacity": ROOMY,
            "allocatable": ROOMY,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        }
        await api.patch(
            NODES,
            str(body["metadata"]["name"]),
            {"status": status},
            patch_type=PatchType.MERGE,
            subresource="status",
        )
    scheduler = Scheduler(
        api, recorder, SchedulerOptions(period=0.5, min_interval=0.1, volcano_sync_grace=0.5)
    )
    task = asyncio.create_task(scheduler.run())
    try:
        yield api
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await recorder.close(drain_seconds=1)
        for name in names:
            with contextlib.suppress(NotFound):
                await api.delete(NODES, name)
        await api.close()
