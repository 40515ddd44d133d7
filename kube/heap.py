"""The cyclic garbage collector while the caches fill for the first time.

A controller's first lists decode tens of thousands of objects into dicts and lists that live as
long as the process. CPython's collector walks every tracked container of the generations it
collects, and the oldest generation is collected again each time it has grown by a quarter, so
filling a cache from nothing walks it over and over: for 10,000 TFJobs (90,000 objects, the
PodGroups, pods and services included) two thirds of the 4.8 s of CPU spent decoding, trimming
and indexing them went to the collector (``docs/performance.md``). Decoded JSON holds no
reference cycles, so those walks find nothing. The collector is therefore paused until the first
lists are in, and what is alive then is moved out of its sight (``gc.freeze``): later collections
walk only what came after. Frozen objects are still freed by reference counting when a cache
drops them; only garbage cycles made before the freeze would outlive it, and the start makes few.

After that, the caches keep growing as objects are created, and CPython's default thresholds
collect the youngest generation every 700 net allocations of containers: in a burst of 1,000
jobs on kube-apiserver the controller ran 578 young collections of about 0.5 ms, 53 middle ones
and 4 full ones of the whole cache, 6 % of its CPU, for decoded JSON that holds no cycles.
``collect_less_often`` raises the thresholds for such a process: the young generation is
collected every 50,000 net allocations (about 25 ms each), the middle one every 20 of those,
and a full collection still follows every 10 middle ones (and only once the heap has grown by a
quarter), so cyclic garbage is still found, later; in the same burst the collector then took 3
young collections, 0.7 % of the CPU.

Public API:

- ``pause_collector_until(done) -> asyncio.Task[None]`` -- pauses the collector now and returns a
  task that awaits ``done`` and then (also when ``done`` fails or the task is cancelled) freezes
  what is alive and resumes the collector, if it was enabled.
- ``collect_less_often()`` -- the thresholds above (``COLLECTOR_THRESHOLDS``).
"""

from __future__ import annotations

import asyncio
import gc
import inspect
from collections.abc import Awaitable
from typing import Final

__all__ = ["COLLECTOR_THRESHOLDS", "collect_less_often", "pause_collector_until"]

# Net container allocations before a young collection; young collections before a middle one;
# middle ones before a full one.
COLLECTOR_THRESHOLDS: Final = (50_000, 20, 10)


def collect_less_often() -> None:
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


def pause_collector_until(done: Awaitable[object]) -> asyncio.Task[None]:
    was_enabled = gc.isenabled()
    gc.disable()

    async def wait() -> None:
        await done

    def resume(_: asyncio.Task[None]) -> None:
        if inspect.iscoroutine(done):
            done.close()  # never started if the task was cancelled at once; a no-op otherwise
        gc.freeze()
        if was_enabled:
            gc.enable()

    # A done callback, not a ``finally``: it runs even when the task is cancelled before it starts.
    task = asyncio.create_task(wait(), name="collector-paused")
    task.add_done_callback(resume)
    return task
