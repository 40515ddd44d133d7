"""The node agent behaves like a kubelet through API outages: the latest status of every pod,
its node's heartbeat and its events are written once the API server is back, however long it was
away, and never out of order."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kube.resources import EVENTS, NODES, PODS
from tests.sandbox.kubelet.harness import eventually, get_pod, pod_manifest, restarts, sandbox_cluster

OUTAGE_SECONDS = 6.0
"""Longer than the three one-second tries the node agent used to make before giving up."""


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


async def test_a_pod_that_finishes_while_the_api_is_away_is_reported_once_it_is_back() -> None:
    async with sandbox_cluster(scheduler=False) as cluster:
        manifest = pod_manifest("finisher", "sleep 1.5; echo done", restart_policy="Never", nodeName="las1")
        await cluster.api.create(PODS, manifest)

        async def running() -> bool:
            return _phase(await get_pod(cluster.api, "finisher")) == "Running"

        await eventually(running, what="the pod to run")
        cluster.handle.inject({"outageSeconds": OUTAGE_SECONDS})
        away = time.monotonic()
        # The container exits about a second into the outage; nobody can hear of it until it ends.
        await asyncio.sleep(OUTAGE_SECONDS + 0.5)

        async def succeeded() -> bool:
            return _phase(await get_pod(cluster.api, "finisher")) == "Succeeded"

        await eventually(succeeded, within=20, what="the finished pod to be reported Succeeded")
        pod = await get_pod(cluster.api, "finisher")
        (container,) = pod["status"]["containerStatuses"]
        assert container["state"]["terminated"]["exitCode"] == 0

        async def heartbeat_after_outage() -> bool:
            node = await cluster.api.get(NODES, "las1")
            ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
            beat = time.mktime(time.strptime(ready["lastHeartbeatTime"], "%Y-%m-%dT%H:%M:%SZ"))
            return beat - time.timezone > time.time() - (time.monotonic() - away) + OUTAGE_SECONDS

        await eventually(heartbeat_after_outage, within=20, what="a node heartbeat after the outage")


async def test_status_writes_under_failing_requests_land_in_order_and_end_with_the_latest() -> None:
    async with sandbox_cluster(scheduler=False) as cluster, cluster.watching(PODS) as pods:
        await asyncio.sleep(0.5)  # the test's own watch opens before requests start failing
        cluster.handle.inject({"errors": {"fraction": 0.5, "code": 500}})
        manifest = pod_manifest("flaky", "sleep 0.2; exit 1", restart_policy="OnFailure", nodeName="las1")
        for attempt in range(50):  # the create itself may be answered 500
            try:
                await cluster.api.create(PODS, manifest)
                break
            except Exception:
                if attempt == 49:
                    raise
                await asyncio.sleep(0.05)
        await asyncio.sleep(4)
        cluster.handle.clear_faults()

        async def restarted() -> bool:
            return restarts(await get_pod(cluster.api, "flaky")) >= 3

        await eventually(restarted, within=20, what="three restarts reported")
        counts = [restarts(p) for p in pods.objects["flaky"]]
        assert counts == sorted(counts), f"restart counts went backwards: {counts}"

        async def events_landed() -> bool:
            events, _ = await cluster.api.list_all(EVENTS, "default")
            started = [
                e for e in events if e["involvedObject"]["name"] == "flaky" and e["reason"] == "Started"
            ]
            return bool(started) and started[0]["count"] >= 3

        await eventually(events_landed, within=20, what="the Started events, counted")
