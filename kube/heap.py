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

Public API:

- ``pause_collector_until(done) -> asyncio.Task[None]`` -- pauses the collector now and returns a
  task that awaits ``done`` and then (also when ``done`` fails or the task is cancelled) freezes
  what is alive and resumes the collector, if it was enabled.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
from collections.abc import Awaitable

__all__ = ["pause_collector_until"]


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
