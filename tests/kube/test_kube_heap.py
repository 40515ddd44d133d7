"""The collector is paused while the first lists fill the caches, and what they hold is frozen."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterator

import pytest

from kube.heap import collect_less_often, pause_collector_until


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    (gc.enable if enabled else gc.disable)()


async def test_the_collector_is_paused_until_done_then_resumes_with_the_cache_frozen() -> None:
    gc.enable()
    gc.unfreeze()
    synced = asyncio.Event()
    task = pause_collector_until(synced.wait())
    assert not gc.isenabled()
    cache = [{"metadata": {"name": f"pod-{i}"}} for i in range(1000)]
    await asyncio.sleep(0)
    assert not gc.isenabled()
    synced.set()
    await task
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(cache)
    assert not any(obj is cache for obj in gc.get_objects())  # frozen: out of the collector's sight


async def test_a_cancelled_or_failed_wait_resumes_the_collector_too() -> None:
    gc.enable()
    for started in (True, False):
        gc.enable()
        task = pause_collector_until(asyncio.Event().wait())
        if started:
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert gc.isenabled()

    async def fails() -> None:
        raise RuntimeError("list failed")

    with pytest.raises(RuntimeError):
        await pause_collector_until(fails())
    assert gc.isenabled()


async def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    await pause_collector_until(asyncio.sleep(0))
    assert not gc.isenabled()


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_collecting_less_often_lets_a_growing_cache_be_and_still_frees_cycles() -> None:
    gc.enable()
    gc.collect()
    young = gc.get_stats()[0]["collections"]
    collect_less_often()
    # A cache growing by 40,000 decoded objects: with the default thresholds, some 57 collections
    cache = [{"metadata": {"name": f"pod-{i}"}} for i in range(20_000)]
    assert gc.get_stats()[0]["collections"] == young
    # Cycles, which only the collector frees, still make it run, and it frees them
    collected = gc.get_stats()[0]["collected"]
    for _ in range(120_000):
        Cycle()
    assert gc.get_stats()[0]["collections"] > young
    assert gc.get_stats()[0]["collected"] - collected >= 50_000
    assert len(cache) == 20_000
