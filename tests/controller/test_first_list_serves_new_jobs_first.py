"""After a (re)start, a job no controller has reconciled yet (no status) is served before the
resync of the jobs that have one: the first list queues it as a change, not as a resync.

The order is read from the reconciler's calls with one worker, not from timing: the statusless
job is listed last (its name sorts last) and must still be the first pass."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controller.config import ControllerConfig
from controller.manager import Controller
from controller.reconciler import PassResult
from controller.resources import TFJOBS
from kube.api import KubeApi
from kube.patches import PatchType
from kube.resources import NAMESPACES

NAMESPACE = "first-list-order"
RECONCILED = 20  # more than the work queue's resync share, so a plain FIFO would show


def _job(name: str) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "tensorflow", "image": "busybox:1.37.0-glibc"}]}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": template}}},
    }


async def test_a_job_without_status_is_reconciled_before_the_resync_of_jobs_with_one(
    api: KubeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    status = {"status": {"conditions": [{"type": "Created", "status": "True", "reason": "TFJobCreated"}]}}
    for index in range(RECONCILED):
        name = f"old-{index:03d}"
        await api.create(TFJOBS, _job(name), NAMESPACE)
        await api.patch(TFJOBS, name, status, NAMESPACE, patch_type=PatchType.MERGE, subresource="status")
    await api.create(TFJOBS, _job("zz-new"), NAMESPACE)

    controller = Controller(api, ControllerConfig(namespace=NAMESPACE, workers=1))
    passes: list[str] = []
    all_done = asyncio.Event()

    async def record(key: str) -> PassResult:
        passes.append(key)
        if len(passes) == RECONCILED + 1:
            all_done.set()
        return PassResult(None, 0, False)

    monkeypatch.setattr(controller.reconciler, "reconcile", record)
    stop = asyncio.Event()
    run = asyncio.create_task(controller.run(stop))
    try:
        async with asyncio.timeout(30):
            await all_done.wait()
    finally:
        stop.set()
        await run
    assert passes[0] == f"{NAMESPACE}/zz-new", passes
    assert sorted(passes[1:]) == [f"{NAMESPACE}/old-{index:03d}" for index in range(RECONCILED)]
