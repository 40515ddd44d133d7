"""The node agent's writer: while the API server fails, newer states fold into the waiting write,
so what lands is the latest and never an older one after a newer; what can never land is dropped;
a vanished object ends the writes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kube.errors import ConnectionFailed, Invalid, NotFound, TooManyRequests
from kube.patches import compose_merge_patches
from kube.workqueue import Backoff
from sandbox.kubelet.writes import LatestWriter, newest, retrying

FAST = Backoff(base=0.01, max=0.05)


class FlakyServer:
    """Fails the first ``failures`` writes, then stores every write it is sent, in order."""

    def __init__(self, failures: int, error: Exception | None = None) -> None:
        self.failures = failures
        self.error = error or ConnectionFailed(0, "ClientConnectorError", "connection refused")
        self.landed: list[Any] = []

    async def send(self, value: Any) -> None:
        await asyncio.sleep(0)
        if self.failures > 0:
            self.failures -= 1
            raise self.error
        self.landed.append(value)


async def test_a_healthy_write_returns_once_it_landed() -> None:
    server = FlakyServer(0)
    writer = LatestWriter("pod", server.send, newest, backoff=FAST)
    assert await writer.write(1) is True
    assert await writer.write(2) is True
    assert server.landed == [1, 2]


async def test_writes_during_an_outage_fold_and_the_latest_lands_in_order() -> None:
    server = FlakyServer(5)
    writer = LatestWriter("pod", server.send, compose_merge_patches, backoff=FAST)
    assert await writer.write({"status": {"phase": "Running", "podIP": "10.0.0.1"}}) is False
    # Later states arrive while it retries: they go out with the failed one, folded.
    assert await writer.write({"status": {"phase": "Succeeded"}}) is False
    assert await writer.write({"status": {"reason": None}}) is False
    await asyncio.wait_for(writer.settled(), 5)
    assert server.landed == [{"status": {"phase": "Succeeded", "podIP": "10.0.0.1", "reason": None}}]
    assert not writer.failing


async def test_429_retry_after_is_honoured_up_to_the_cap() -> None:
    server = FlakyServer(1, TooManyRequests(429, "TooManyRequests", "slow down", retry_after=0.2))
    writer = LatestWriter("node", server.send, newest, backoff=FAST)
    started = asyncio.get_running_loop().time()
    await writer.write("beat")
    await asyncio.wait_for(writer.settled(), 5)
    assert server.landed == ["beat"]
    # Retry-After asks for 0.2 s but the cap is 0.05 s: an agent never waits longer than its cap.
    assert asyncio.get_running_loop().time() - started < 0.2


async def test_a_write_that_can_never_land_is_dropped_and_the_next_goes_out() -> None:
    server = FlakyServer(1, Invalid(422, "Invalid", "bad status"))
    writer = LatestWriter("pod", server.send, newest, backoff=FAST)
    assert await writer.write("bad") is False
    assert await writer.write("good") is True
    assert server.landed == ["good"]


async def test_a_vanished_object_ends_the_writes() -> None:
    gone: list[bool] = []
    server = FlakyServer(1, NotFound(404, "NotFound", "pods not found"))
    writer = LatestWriter("pod", server.send, newest, on_gone=lambda: gone.append(True), backoff=FAST)
    assert await writer.write("status") is False
    assert writer.gone and gone == [True]
    assert await writer.write("later") is False
    assert server.landed == []


async def test_retrying_calls_until_the_call_succeeds_and_raises_what_cannot_succeed() -> None:
    server = FlakyServer(3)
    await retrying(lambda: server.send("delete"), "delete", FAST)
    assert server.landed == ["delete"]
    refused = FlakyServer(1, Invalid(422, "Invalid", "no"))
    with pytest.raises(Invalid):
        await retrying(lambda: refused.send("delete"), "delete", FAST)
    assert refused.landed == []
