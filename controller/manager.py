"""The running controller: caches, work queue, workers, leader election and shutdown, wired together.

Caches are filled on every replica, leader or not, so ``ready`` (caches synced) holds on followers
too and a new leader starts with a warm cache. Only the leader runs workers: with leader election
on, the workers are the leading task, and they are cancelled the moment the Lease cannot be
renewed, before another replica can take it over. ``run()`` then raises ``LeadershipLost`` and the
process exits, the simplest correct way to start again from a clean state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from controller.actions import ActionFailed, ActionRunner
from controller.caches import JobCaches
from controller.config import ControllerConfig
from controller.metrics import ControllerMetrics
from controller.reconciler import Reconciler
from controller.status import StatusWriter
from kube.api import KubeApi
from kube.errors import ApiError
from kube.events import EventRecorder
from kube.leader import LeaderElector
from kube.ownwrites import OwnWrites
from kube.workqueue import Backoff, ShutDown, WorkQueue
from tfjob.constants import CONTROLLER_NAME
from tfjob.planner.actions import Event

logger = logging.getLogger(__name__)

QUEUE_NAME = "tfjob"
# How long a SIGTERM waits for passes in flight before cancelling them.
DRAIN_SECONDS = 10.0


class LeadershipLost(Exception):
    """This replica stopped holding the Lease; its workers have been stopped."""


class Controller:
    def __init__(
        self,
        api: KubeApi,
        config: ControllerConfig,
        *,
        metrics: ControllerMetrics | None = None,
        watch_timeout_seconds: int = 290,
        backoff: Backoff = Backoff(base=0.5, max=300.0),
    ) -> None:
        self.api = api
        self.config = config
        self.metrics = metrics if metrics is not None else ControllerMetrics()
        self.queue = WorkQueue(QUEUE_NAME, backoff=backoff, observer=self.metrics.work_queue)
        self.writes = OwnWrites()
        self.caches = JobCaches(
            api,
            self.writes,
            self.queue.add,
            enqueue_resync=self.queue.add_resync,
            namespace=config.namespace,
            scope=config.scope,
            settings=config.settings,
            watch_timeout_seconds=watch_timeout_seconds,
        )
        self.caches.reflectors[0].add_handler(self._on_job_event)
        self.metrics.watch_jobs(self.caches.jobs.list)
        self.events = EventRecorder(api, CONTROLLER_NAME)
        self.status_writer = StatusWriter(api, self.writes, self.metrics)
        self.reconciler = Reconciler(
            self.caches,
            ActionRunner(api, self.writes, self.metrics, config.settings, self.caches.unadmitted),
            self.status_writer,
            self._record_event,
            self.metrics,
            config.settings,
        )
        self._elector: LeaderElector | None = None
        if config.leader_election is not None:
            self._elector = LeaderElector(api, config.leader_election)
        self._leading = False
        self._stopping = False
        # Workers take keys only while this is set; see ``paused``.
        self._unpaused = asyncio.Event()
        self._unpaused.set()
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    # -- state -------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Every cache has been listed once (followers included)."""
        return self.caches.synced

    @property
    def leading(self) -> bool:
        return self._leading

    def _record_event(self, job: Any, event: Event) -> None:
        self.events.record(job, event.type, event.reason, event.message)

    def _on_job_event(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event_type == "DELETED":
            uid = str((obj.get("metadata") or {}).get("uid") or "")
            self.status_writer.forget(uid)
            self.reconciler.outside_scope.forget(uid)
            self.writes.forget_owner(uid)

    @contextlib.asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """Hold every pass back (after the ones in flight finish) until the block ends.

        Watches keep filling the caches and the queue meanwhile, so the first pass afterwards sees
        every change made inside the block at once, e.g. several pods changing state together.
        """
        self._unpaused.clear()
        try:
            await self._idle.wait()
            yield
        finally:
            self._unpaused.set()

    # -- running -----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Run until ``stop`` is set (graceful) or the task is cancelled; raises ``LeadershipLost``."""
        stop = stop if stop is not None else asyncio.Event()
        reflector_tasks = [
            asyncio.create_task(r.run(), name=f"reflector-{i}") for i, r in enumerate(self.caches.reflectors)
        ]
        main = asyncio.create_task(self._run_synced(), name="controller-main")
        stopper = asyncio.create_task(stop.wait(), name="controller-stop")
        try:
            done, _ = await asyncio.wait(
                {main, stopper, *reflector_tasks}, return_when=asyncio.FIRST_COMPLETED
            )
            if main in done:
                main.result()
            for task in reflector_tasks:
                if task in done:
                    task.result()  # a reflector only ends by failing
            if stopper in done:
                logger.info("stopping: draining passes in flight")
                await self._drain(main)
        finally:
            every: list[asyncio.Task[Any]] = [main, stopper, *reflector_tasks]
            for task in every:
                task.cancel()
            await asyncio.gather(*every, return_exceptions=True)
            await self.events.close()

    async def _drain(self, main: asyncio.Task[None]) -> None:
        self._stopping = True
        self.queue.shutdown()
        if not self._leading:
            return  # still syncing or campaigning: nothing in flight to wait for
        with contextlib.suppress(TimeoutError, asyncio.CancelledError, ShutDown, LeadershipLost):
            async with asyncio.timeout(DRAIN_SECONDS):
                await main

    async def _run_synced(self) -> None:
        await self.caches.wait_synced()
        logger.info("caches synced: %d jobs, %d pods", len(self.caches.jobs), len(self.caches.pods))
        if self._elector is None:
            await self._lead()
            return
        await self._elector.run(self._lead, self._stopped_leading)
        if not self._stopping:
            raise LeadershipLost(f"{self._elector.identity} lost the lease")

    def _stopped_leading(self) -> None:
        self._leading = False
        self.metrics.is_leader.set(0)

    async def _lead(self) -> None:
        self._leading = True
        self.metrics.is_leader.set(1)
        logger.info("leading: starting %d workers", self.config.workers)
        for key in self.caches.jobs:
            self.queue.add_resync(key)
        try:
            async with asyncio.TaskGroup() as group:
                for index in range(self.config.workers):
                    group.create_task(self._worker(), name=f"worker-{index}")
        finally:
            self._leading = False
            self.metrics.is_leader.set(0)

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                await self._unpaused.wait()
                self._in_flight += 1
                self._idle.clear()
                try:
                    result = await self.reconciler.reconcile(key)
                finally:
                    self._in_flight -= 1
                    if self._in_flight == 0:
                        self._idle.set()
            except asyncio.CancelledError:
                self.queue.done(key)
                raise
            except Exception as exc:
                # API failures are expected now and then; anything else is a bug worth a traceback.
                expected = isinstance(exc, ActionFailed | ApiError)
                logger.warning(
                    "reconcile of %s failed, retrying with backoff: %s", key, exc, exc_info=not expected
                )
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
                if result.requeue_after is not None:
                    self.queue.add_after(key, result.requeue_after)
            self.queue.done(key)
            # A pass that makes no request never suspends, and neither does get() with keys waiting:
            # without this, a worker going through thousands of passes that find nothing to do (the
            # resync after a restart) would hold the loop, and /readyz, the watches and the change
            # the queue should serve first would wait for all of them.
            await asyncio.sleep(0)
