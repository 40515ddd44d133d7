"""Lease leader election: one leader at a time, release on stop, failover when a leader is cut off."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from kube.api import KubeApi
from kube.leader import LeaderElector, LeaseTerms
from kube.resources import LEASES
from tests.kube.conftest import connect

TIMINGS = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.2}


class Candidate:
    def __init__(self, api: KubeApi, namespace: str, identity: str) -> None:
        self.elector = LeaderElector(
            api, LeaseTerms(namespace=namespace, name="kube-test-lock", identity=identity, **TIMINGS)
        )
        self.started = asyncio.Event()
        self.stopped = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def lead(self) -> None:
        self.started.set()
        await asyncio.Event().wait()  # lead until cancelled

    def start(self) -> None:
        self.task = asyncio.create_task(self.elector.run(self.lead, self.stopped.set))

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


async def watch_for_overlap(
    candidates: list[Candidate], overlaps: list[float], done: Callable[[], bool]
) -> None:
    loop = asyncio.get_running_loop()
    while not done():
        if sum(c.elector.is_leader for c in candidates) > 1:
            overlaps.append(loop.time())
        await asyncio.sleep(0.01)


async def test_only_one_leads_and_a_released_lease_fails_over_at_once(
    sandbox_apiserver: Any, namespace: str
) -> None:
    async with connect(sandbox_apiserver, qps=0) as api_a, connect(sandbox_apiserver, qps=0) as api_b:
        a, b = Candidate(api_a, namespace, "a"), Candidate(api_b, namespace, "b")
        overlaps: list[float] = []
        finished = False
        monitor = asyncio.create_task(watch_for_overlap([a, b], overlaps, lambda: finished))
        a.start()
        await asyncio.wait_for(a.started.wait(), 5)
        b.start()
        await asyncio.sleep(1.0)  # several of b's retry periods
        assert a.elector.is_leader and not b.elector.is_leader and not b.started.is_set()

        loop = asyncio.get_running_loop()
        stopped_at = loop.time()
        await a.stop()
        assert a.stopped.is_set() and not a.elector.is_leader
        await asyncio.wait_for(b.started.wait(), TIMINGS["lease_duration"])
        # a released its lease, so b did not have to wait for it to expire
        assert loop.time() - stopped_at < TIMINGS["lease_duration"]
        lease = await api_b.get(LEASES, "kube-test-lock", namespace)
        assert lease["spec"]["holderIdentity"] == "b"
        assert lease["spec"]["leaseTransitions"] >= 1
        await b.stop()
        finished = True
        await monitor
        assert overlaps == []


async def test_a_leader_cut_off_from_the_server_steps_down_before_a_successor_takes_over(
    sandbox_apiserver: Any, namespace: str
) -> None:
    async with connect(sandbox_apiserver, qps=0) as api_a, connect(sandbox_apiserver, qps=0) as api_b:
        a, b = Candidate(api_a, namespace, "a"), Candidate(api_b, namespace, "b")
        overlaps: list[float] = []
        finished = False
        monitor = asyncio.create_task(watch_for_overlap([a, b], overlaps, lambda: finished))
        a.start()
        await asyncio.wait_for(a.started.wait(), 5)
        b.start()
        await asyncio.sleep(0.5)
        assert not b.elector.is_leader

        # Partition a: its requests now fail to connect, so it can neither renew nor release.
        api_a.client.host = "http://127.0.0.1:9"
        await asyncio.wait_for(a.stopped.wait(), TIMINGS["renew_deadline"] + 2)
        assert a.task is not None and a.task.done()  # run() returned after losing leadership
        await asyncio.wait_for(b.started.wait(), TIMINGS["lease_duration"] + 2)
        finished = True
        await monitor
        assert overlaps == []
        await b.stop()
