"""Work queue semantics: dedup, one worker per key, per-key retry backoff, timers, shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from kube.workqueue import Backoff, ShutDown, WorkQueue


async def drain(queue: WorkQueue) -> list[str]:
    keys = []
    while len(queue):
        key = await queue.get()
        keys.append(key)
        queue.done(key)
    return keys


async def test_keys_are_deduplicated_and_fifo() -> None:
    queue = WorkQueue("t")
    for key in ["a", "b", "a", "c", "b"]:
        queue.add(key)
    assert len(queue) == 3
    assert await drain(queue) == ["a", "b", "c"]


async def test_a_key_is_never_handed_to_two_workers_at_once() -> None:
    queue = WorkQueue("t")
    queue.add("a")
    first = await queue.get()
    queue.add("a")  # re-added while processing: must wait for done()
    assert len(queue) == 0
    second_get = asyncio.create_task(queue.get())
    await asyncio.sleep(0.01)
    assert not second_get.done()
    queue.done(first)
    assert await asyncio.wait_for(second_get, 1) == "a"
    queue.done("a")
    assert len(queue) == 0


async def _four_workers(queue: WorkQueue, feed: Callable[[], Awaitable[None]]) -> tuple[list[str], list[str]]:
    """Four workers serve ``queue`` while ``feed`` adds keys, until it is drained: the keys found
    already being worked on when handed out again (must be none), and every key processed."""
    active: set[str] = set()
    overlaps: list[str] = []
    processed: list[str] = []

    async def worker() -> None:
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            if key in active:
                overlaps.append(key)
            active.add(key)
            await asyncio.sleep(0.001)
            processed.append(key)
            active.discard(key)
            queue.done(key)

    workers = [asyncio.create_task(worker()) for _ in range(4)]
    await feed()
    for _ in range(1000):  # let the workers drain the queue
        if not len(queue) and not queue.processing:
            break
        await asyncio.sleep(0.005)
    queue.shutdown()
    await asyncio.gather(*workers)
    return overlaps, processed


async def test_concurrent_workers_never_overlap_on_a_key() -> None:
    queue = WorkQueue("t")

    async def feed() -> None:
        for _ in range(20):
            for key in ["a", "b", "c"]:
                queue.add(key)
            await asyncio.sleep(0.0005)

    overlaps, processed = await _four_workers(queue, feed)
    assert overlaps == []
    assert set(processed) == {"a", "b", "c"}


def test_backoff_doubles_up_to_the_cap() -> None:
    backoff = Backoff(base=0.5, max=4.0)
    assert [backoff.delay(n) for n in range(0, 7)] == [0.0, 0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert backoff.delay(10_000) == 4.0
    with pytest.raises(ValueError):
        Backoff(base=0, max=1)


async def test_rate_limited_retries_count_per_key_until_forgotten() -> None:
    queue = WorkQueue("t", backoff=Backoff(base=0.001, max=0.004))
    queue.add_rate_limited("a")
    queue.add_rate_limited("a")
    queue.add_rate_limited("b")
    assert queue.num_requeues("a") == 2
    assert queue.num_requeues("b") == 1
    assert await asyncio.wait_for(queue.get(), 1) in {"a", "b"}
    queue.forget("a")
    assert queue.num_requeues("a") == 0


async def test_add_after_hands_keys_out_in_deadline_order() -> None:
    queue = WorkQueue("t")
    queue.add_after("late", 0.06)
    queue.add_after("early", 0.02)
    queue.add_after("middle", 0.04)
    assert len(queue) == 0 and queue.pending_timers == 3
    order = []
    for _ in range(3):
        key = await asyncio.wait_for(queue.get(), 2)
        order.append(key)
        queue.done(key)
    assert order == ["early", "middle", "late"]


async def test_the_earliest_deadline_wins_for_one_key() -> None:
    queue = WorkQueue("t")
    queue.add_after("a", 30)
    queue.add_after("a", 0.01)
    queue.add_after("a", 60)
    assert queue.pending_timers == 1
    assert await asyncio.wait_for(queue.get(), 2) == "a"
    queue.done("a")
    assert queue.pending_timers == 0


async def test_immediate_add_keeps_a_pending_timer() -> None:
    queue = WorkQueue("t")
    queue.add_after("a", 0.02)
    queue.add("a")
    assert await asyncio.wait_for(queue.get(), 1) == "a"
    queue.done("a")
    assert await asyncio.wait_for(queue.get(), 1) == "a"  # the timer still fires


async def test_shutdown_wakes_waiting_workers_and_ignores_new_adds() -> None:
    queue = WorkQueue("t")
    waiting = asyncio.create_task(queue.get())
    await asyncio.sleep(0.01)
    queue.shutdown()
    with pytest.raises(ShutDown):
        await asyncio.wait_for(waiting, 1)
    queue.add("a")
    assert len(queue) == 0
    assert queue.shutting_down


class RecordingObserver:
    def __init__(self) -> None:
        self.adds = 0
        self.retries = 0
        self.depths: list[int] = []
        self.latencies: list[float] = []
        self.durations: list[float] = []

    def on_add(self, name: str) -> None:
        self.adds += 1

    def on_depth(self, name: str, depth: int) -> None:
        self.depths.append(depth)

    def on_retry(self, name: str) -> None:
        self.retries += 1

    def on_queue_latency(self, name: str, seconds: float) -> None:
        self.latencies.append(seconds)

    def on_work_duration(self, name: str, seconds: float) -> None:
        self.durations.append(seconds)


async def test_observer_sees_adds_depth_retries_and_latencies() -> None:
    observer = RecordingObserver()
    queue = WorkQueue("t", backoff=Backoff(base=0.001, max=0.001), observer=observer)
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert observer.adds == 2
    assert observer.depths[-1] == 2
    key = await queue.get()
    queue.add_rate_limited(key)
    queue.done(key)
    assert observer.retries == 1
    assert len(observer.latencies) == 1 and len(observer.durations) == 1
    assert observer.depths[-1] == 1


async def test_prometheus_metrics_use_client_go_names() -> None:
    from prometheus_client import CollectorRegistry

    from kube.workqueue import PrometheusWorkQueueMetrics

    registry = CollectorRegistry()
    queue = WorkQueue("tfjob", observer=PrometheusWorkQueueMetrics(registry))
    queue.add("a")
    queue.done(await queue.get())
    assert registry.get_sample_value("workqueue_adds_total", {"name": "tfjob"}) == 1.0
    assert registry.get_sample_value("workqueue_depth", {"name": "tfjob"}) == 0.0
    assert registry.get_sample_value("workqueue_work_duration_seconds_count", {"name": "tfjob"}) == 1.0


def test_a_timer_needs_a_finite_delay() -> None:
    queue = WorkQueue("t")
    with pytest.raises(ValueError, match="finite"):
        queue.add_after("a", float("inf"))
    with pytest.raises(ValueError, match="finite"):
        queue.add_after("a", float("nan"))


async def test_changes_are_served_before_resyncs() -> None:
    queue = WorkQueue("t", resync_share=100)
    for key in ["old-1", "old-2", "old-3"]:
        queue.add_resync(key)
    queue.add("new")
    assert len(queue) == 4
    assert await drain(queue) == ["new", "old-1", "old-2", "old-3"]


async def test_a_change_moves_a_waiting_resync_forward_once() -> None:
    queue = WorkQueue("t", resync_share=100)
    for key in ["a", "b", "c"]:
        queue.add_resync(key)
    queue.add("c")
    queue.add("c")
    queue.add_resync("c")  # already queued, as a change: stays one
    assert len(queue) == 3
    assert await drain(queue) == ["c", "a", "b"]


async def test_the_resync_is_never_starved_by_a_stream_of_changes() -> None:
    queue = WorkQueue("t", resync_share=2)
    for index in range(3):
        queue.add_resync(f"old-{index}")
    served = []
    for index in range(9):
        queue.add(f"new-{index}")  # a change always waits when the next key is handed out
        key = await queue.get()
        served.append(key)
        queue.done(key)
    assert served == ["new-0", "new-1", "old-0", "new-2", "new-3", "old-1", "new-4", "new-5", "old-2"]


async def test_a_resync_of_a_key_being_processed_waits_for_done_and_stays_second() -> None:
    queue = WorkQueue("t", resync_share=100)
    queue.add("a")
    assert await queue.get() == "a"
    queue.add_resync("a")
    queue.add_resync("b")
    assert len(queue) == 1  # "a" is not handed out while it is being processed
    queue.add("c")
    queue.done("a")
    assert await drain(queue) == ["c", "b", "a"]


async def test_a_change_to_a_key_being_processed_after_its_resync_puts_it_first() -> None:
    queue = WorkQueue("t", resync_share=100)
    queue.add("a")
    assert await queue.get() == "a"
    queue.add_resync("b")
    queue.add_resync("a")
    queue.add("a")
    queue.done("a")
    assert await drain(queue) == ["a", "b"]


async def test_resync_keys_keep_one_worker_per_key_under_concurrency() -> None:
    queue = WorkQueue("t", resync_share=1)

    async def feed() -> None:
        for round_ in range(20):
            for key in ["a", "b", "c", "d"]:
                (queue.add_resync if round_ % 2 else queue.add)(key)
            await asyncio.sleep(0.0005)

    overlaps, processed = await _four_workers(queue, feed)
    assert overlaps == []
    assert set(processed) == {"a", "b", "c", "d"}


def test_the_resync_share_is_at_least_one() -> None:
    with pytest.raises(ValueError, match="resync_share"):
        WorkQueue("t", resync_share=0)
