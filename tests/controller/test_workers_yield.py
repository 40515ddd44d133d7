"""Workers let the rest of the process run between passes, even passes that make no request."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controller.config import ControllerConfig
from controller.manager import Controller
from controller.reconciler import PassResult
from kube.api import KubeApi

PASSES = 200


async def test_a_worker_going_through_passes_without_requests_yields_the_loop_between_them(
    api: KubeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    controller = Controller(api, ControllerConfig(workers=1))
    passes: list[str] = []
    all_done = asyncio.Event()

    async def no_request(key: str) -> PassResult:  # as a resync pass that finds nothing to do
        passes.append(key)
        if len(passes) == PASSES:
            all_done.set()
        return PassResult(None, 0, False)

    monkeypatch.setattr(controller.reconciler, "reconcile", no_request)
    for index in range(PASSES):
        controller.queue.add_resync(f"ns/job-{index}")
    seen_at: list[int] = []

    async def meanwhile() -> Any:  # e.g. /readyz, or a watch event
        seen_at.append(len(passes))

    worker = asyncio.create_task(controller._worker())
    other = asyncio.create_task(meanwhile())
    try:
        async with asyncio.timeout(10):
            await all_done.wait()
    finally:
        controller.queue.shutdown()
        await asyncio.gather(worker, other)
    assert seen_at and seen_at[0] < 5, seen_at
