"""After a restart every existing job is queued for a pass; a job created meanwhile goes first.

The existing jobs have a status, as a controller before the restart left them: a job without one
was never reconciled and is itself queued as a change
(``tests/controller/test_first_list_serves_new_jobs_first.py``)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from controller.manager import Controller
from controller.resources import TFJOBS
from kube.api import KubeApi
from kube.client import make_api_client
from kube.patches import PatchType

from .cluster import Cluster, eventually, simple_job
from .operator import controller_config

EXISTING = 12
RECONCILED = {"status": {"conditions": [{"type": "Created", "status": "True", "reason": "TFJobCreated"}]}}


async def _true(value: bool) -> bool:
    return value


async def test_a_job_created_after_a_restart_is_reconciled_before_the_resync_of_the_others(
    cluster: Cluster, controller_kubeconfig: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = cluster.namespace
    for index in range(EXISTING):
        await cluster.create_job(simple_job(f"old-{index}", ns))
        await cluster.api.patch(
            TFJOBS, f"old-{index}", RECONCILED, ns, patch_type=PatchType.MERGE, subresource="status"
        )
    client = await make_api_client(controller_kubeconfig)
    api = KubeApi(client, qps=1000.0, burst=1000)
    controller = Controller(api, controller_config(namespace=ns, workers=1))
    passes: list[str] = []
    reconcile = controller.reconciler.reconcile

    async def recorded(key: str) -> object:
        passes.append(key)
        return await reconcile(key)

    monkeypatch.setattr(controller.reconciler, "reconcile", recorded)
    stop = asyncio.Event()
    task: asyncio.Task[None] | None = None
    try:
        async with controller.paused():
            task = asyncio.create_task(controller.run(stop))
            # Synced, and the one worker holds the first resync key, waiting for the pause to end.
            await eventually(
                lambda: _true(controller.ready and bool(controller.queue.processing)),
                what="a synced controller with a key taken",
            )
            assert len(controller.queue) == EXISTING - 1
            await cluster.create_job(simple_job("new", ns))
            await eventually(lambda: _true(f"{ns}/new" in controller.caches.jobs), what="the new job cached")
        await eventually(lambda: _true(len(set(passes)) == EXISTING + 1), within=30, what="every job's pass")
        assert passes[1] == f"{ns}/new", passes
        assert set(passes[2:]) >= {f"{ns}/old-{i}" for i in range(EXISTING)} - {passes[0]}
        await eventually(lambda: cluster.podgroup("new"), what="the new job's PodGroup")
    finally:
        stop.set()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                async with asyncio.timeout(15):
                    await task
        await api.close()
