"""The event recorder writes one aggregated Event per repeated occurrence, with a growing count."""

from __future__ import annotations

import asyncio
from typing import Any

from kube.api import KubeApi
from kube.events import EventRecorder
from kube.resources import CONFIGMAPS, EVENTS


async def events_for(api: KubeApi, namespace: str, name: str) -> list[dict[str, Any]]:
    items, _ = await api.list_all(EVENTS, namespace)
    return [item for item in items if item["involvedObject"]["name"] == name]


async def test_repeats_become_one_event_with_count(kube_api: KubeApi, namespace: str) -> None:
    involved = await kube_api.create(
        CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "subject"}}, namespace
    )
    recorder = EventRecorder(kube_api, "kube-tests", host="test-host")
    try:
        recorder.record(involved, "Warning", "Flapping", "it flapped")
        await recorder.flush()
        for _ in range(3):
            recorder.record(involved, "Warning", "Flapping", "it flapped")
        await recorder.flush()
        recorder.record(involved, "Normal", "Calm", "it calmed down")
        await recorder.flush()
    finally:
        await recorder.close()

    events = await events_for(kube_api, namespace, "subject")
    by_reason = {event["reason"]: event for event in events}
    assert sorted(by_reason) == ["Calm", "Flapping"] and len(events) == 2
    flapping = by_reason["Flapping"]
    assert flapping["count"] == 4
    assert flapping["type"] == "Warning" and flapping["message"] == "it flapped"
    assert flapping["involvedObject"]["uid"] == involved["metadata"]["uid"]
    assert flapping["involvedObject"]["kind"] == "ConfigMap"
    assert flapping["source"] == {"component": "kube-tests", "host": "test-host"}
    assert flapping["lastTimestamp"] >= flapping["firstTimestamp"]
    assert by_reason["Calm"]["count"] == 1


async def test_bad_input_is_logged_not_raised(kube_api: KubeApi) -> None:
    recorder = EventRecorder(kube_api, "kube-tests")
    recorder.record({"metadata": {"name": "no-kind"}}, "Normal", "R", "m")
    recorder.record({"kind": "Pod", "metadata": {"name": "p"}}, "Loud", "R", "m")
    await recorder.flush()
    await recorder.close()
    recorder.record({"kind": "Pod", "metadata": {"name": "p"}}, "Normal", "R", "after close")


async def test_rate_limited_writes_fold_a_burst_of_repeats(
    sandbox_apiserver: Any, kube_api: KubeApi, namespace: str
) -> None:
    involved = await kube_api.create(
        CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "busy"}}, namespace
    )
    recorder = EventRecorder(kube_api, "kube-tests", qps=5, burst=1)
    try:
        for _ in range(10):
            recorder.record(involved, "Normal", "Tick", "tick")
            await asyncio.sleep(0)  # let the writer take its one burst token for the first occurrence
        await recorder.flush()
    finally:
        await recorder.close()
    (event,) = await events_for(kube_api, namespace, "busy")
    assert event["count"] == 10
    writes = [r for r in sandbox_apiserver.request_log()
              if r.resource == "events" and r.namespace == namespace and r.verb in ("create", "patch")]
    assert 1 <= len(writes) <= 2  # ten occurrences, at most a create and one folded patch
