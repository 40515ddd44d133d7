"""Status writes against the sandbox API server: only changes are sent, and a field the server
does not keep is not sent again and again (no hot loop)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.metrics import ControllerMetrics
from controller.resources import TFJOBS
from controller.status import StatusWriter
from kube.api import KubeApi
from kube.ownwrites import OwnWrites


def _job(name: str) -> dict[str, Any]:
    container = {"name": "tensorflow", "image": "busybox:1.37.0-glibc"}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [container]}}}}},
    }


def _status_writes(apiserver: Any, name: str) -> int:
    return sum(
        1
        for r in apiserver.request_log()
        if r.resource == "tfjobs" and r.subresource == "status" and r.name == name
    )


async def test_a_status_is_written_once_and_an_unchanged_one_not_at_all(api: KubeApi, apiserver: Any) -> None:
    writer = StatusWriter(api, OwnWrites(), ControllerMetrics())
    job = await api.create(TFJOBS, _job("once"), "default")
    status = {
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "TFJobCreated",
                "message": "TFJob once is created.",
            }
        ]
    }
    assert await writer.write(job, status)
    stored = await api.get(TFJOBS, "once", "default")
    assert stored["status"] == status
    assert not await writer.write(stored, status)
    assert _status_writes(apiserver, "once") == 1


async def test_a_field_the_server_prunes_is_not_rewritten_on_every_pass(api: KubeApi, apiserver: Any) -> None:
    writer = StatusWriter(api, OwnWrites(), ControllerMetrics())
    job = await api.create(TFJOBS, _job("pruned"), "default")
    status = {"startTime": "2026-11-29T10:00:00Z", "notInTheSchema": {"x": 1}}
    assert await writer.write(job, status)
    stored = await api.get(TFJOBS, "pruned", "default")
    assert "notInTheSchema" not in stored["status"], "the CRD's structural schema prunes unknown fields"
    assert not await writer.write(stored, status)
    assert _status_writes(apiserver, "pruned") == 1


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _writer(api: KubeApi, batch_seconds: float) -> tuple[StatusWriter, _Clock]:
    clock = _Clock()
    writer = StatusWriter(api, OwnWrites(), ControllerMetrics(), batch_seconds=batch_seconds, clock=clock)
    return writer, clock


def _counts(active: int, succeeded: int = 0, failed: int = 0) -> dict[str, Any]:
    return {"Worker": {"active": active, "succeeded": succeeded, "failed": failed}}


CREATED = {"type": "Created", "status": "True", "reason": "TFJobCreated", "message": "created"}
RUNNING = {"type": "Running", "status": "True", "reason": "TFJobRunning", "message": "running"}


async def test_counts_only_changes_are_held_back_briefly_and_folded_into_one_write(
    api: KubeApi, apiserver: Any
) -> None:
    writer, clock = _writer(api, 0.5)
    job = await api.create(TFJOBS, _job("batched"), "default")
    uid = job["metadata"]["uid"]
    assert await writer.write(job, {"conditions": [CREATED, RUNNING], "replicaStatuses": _counts(1)})
    job = await api.get(TFJOBS, "batched", "default")
    assert not await writer.write(job, {"conditions": [CREATED, RUNNING], "replicaStatuses": _counts(2)})
    assert writer.due_in(uid) == 0.5
    clock.now += 0.3
    assert not await writer.write(job, {"conditions": [CREATED, RUNNING], "replicaStatuses": _counts(3)})
    assert writer.due_in(uid) == pytest.approx(0.2), "the wait counts from the first held change"
    clock.now += 0.2
    assert await writer.write(job, {"conditions": [CREATED, RUNNING], "replicaStatuses": _counts(3)})
    assert writer.due_in(uid) is None
    stored = await api.get(TFJOBS, "batched", "default")
    assert stored["status"]["replicaStatuses"] == _counts(3)
    assert _status_writes(apiserver, "batched") == 2


async def test_a_condition_change_or_a_new_failure_is_written_at_once_with_the_latest_counts(
    api: KubeApi, apiserver: Any
) -> None:
    writer, _clock = _writer(api, 5.0)
    job = await api.create(TFJOBS, _job("urgent"), "default")
    assert await writer.write(job, {"conditions": [CREATED], "replicaStatuses": _counts(0)})
    job = await api.get(TFJOBS, "urgent", "default")
    assert not await writer.write(job, {"conditions": [CREATED], "replicaStatuses": _counts(1)})
    assert await writer.write(job, {"conditions": [CREATED, RUNNING], "replicaStatuses": _counts(2)})
    assert writer.due_in(job["metadata"]["uid"]) is None
    job = await api.get(TFJOBS, "urgent", "default")
    assert job["status"]["replicaStatuses"] == _counts(2)
    assert await writer.write(job, {"conditions": [CREATED, RUNNING], "replicaStatuses": _counts(1, 0, 1)})
    assert _status_writes(apiserver, "urgent") == 3


async def test_a_held_back_start_keeps_the_first_start_time_planned(api: KubeApi) -> None:
    writer, clock = _writer(api, 0.5)
    job = await api.create(TFJOBS, _job("started"), "default")
    assert await writer.write(job, {"conditions": [CREATED]})
    job = await api.get(TFJOBS, "started", "default")
    first = {"conditions": [CREATED], "startTime": "2026-12-01T10:00:00Z", "replicaStatuses": {"Worker": {}}}
    assert not await writer.write(job, first)
    clock.now += 0.5
    later = {**first, "startTime": "2026-12-01T10:00:01Z"}
    assert await writer.write(job, later)  # type: ignore[arg-type]
    stored = await api.get(TFJOBS, "started", "default")
    assert stored["status"]["startTime"] == "2026-12-01T10:00:00Z"


def _created(name: str, message: str | None = None) -> dict[str, Any]:
    return {
        "type": "Created",
        "status": "True",
        "reason": "TFJobCreated",
        "message": message or f"TFJob {name} is created.",
    }


async def test_a_first_status_while_the_gang_waits_is_folded_into_the_write_that_creates_the_pods(
    api: KubeApi, apiserver: Any
) -> None:
    writer, clock = _writer(api, 0.5)
    job = await api.create(TFJOBS, _job("gang-quick"), "default")
    uid = job["metadata"]["uid"]
    waiting = {"conditions": [_created("gang-quick")], "lastReconcileTime": "2026-12-01T10:00:00Z"}
    assert not await writer.write(job, waiting)  # type: ignore[arg-type]
    assert writer.due_in(uid) == 0.5
    clock.now += 0.2
    # Volcano admitted the gang: the pass creating the pods plans Created anew, the start and counts.
    started = {
        "conditions": [_created("gang-quick")],
        "startTime": "2026-12-01T10:00:00Z",
        "replicaStatuses": {"Worker": {}},
    }
    assert await writer.write(job, started)  # type: ignore[arg-type]
    assert writer.due_in(uid) is None
    stored = await api.get(TFJOBS, "gang-quick", "default")
    assert stored["status"] == {**started, "lastReconcileTime": "2026-12-01T10:00:00Z"}
    assert _status_writes(apiserver, "gang-quick") == 1


async def test_a_gang_that_waits_longer_gets_its_created_condition_once_the_moment_is_over(
    api: KubeApi, apiserver: Any
) -> None:
    writer, clock = _writer(api, 0.5)
    job = await api.create(TFJOBS, _job("gang-slow"), "default")
    waiting = {"conditions": [_created("gang-slow")], "lastReconcileTime": "2026-12-01T10:00:00Z"}
    assert not await writer.write(job, waiting)  # type: ignore[arg-type]
    clock.now += 0.5
    later = {**waiting, "lastReconcileTime": "2026-12-01T10:00:01Z"}
    assert await writer.write(job, later)  # type: ignore[arg-type]
    stored = await api.get(TFJOBS, "gang-slow", "default")
    assert stored["status"] == waiting, "the wait's start is the one first planned"
    assert _status_writes(apiserver, "gang-slow") == 1
    why = {**waiting, "conditions": [_created("gang-slow", "TFJob gang-slow is waiting for Volcano.")]}
    assert await writer.write(stored, why), "once a Created condition is stored, nothing is held as first"  # type: ignore[arg-type]
    assert _status_writes(apiserver, "gang-slow") == 2


async def test_a_first_status_that_says_more_than_created_is_written_at_once(
    api: KubeApi, apiserver: Any
) -> None:
    writer, _clock = _writer(api, 5.0)
    jobs = {name: await api.create(TFJOBS, _job(name), "default") for name in ("refused", "no-gang")}
    refused = {
        "conditions": [_created("refused", "TFJob refused is created. The API refused pod refused-worker-0")],
        "lastReconcileTime": "2026-12-01T10:00:00Z",
    }
    assert await writer.write(jobs["refused"], refused)  # type: ignore[arg-type]
    assert await writer.write(jobs["no-gang"], {"conditions": [_created("no-gang")]})  # type: ignore[typeddict-item]
    assert _status_writes(apiserver, "refused") == _status_writes(apiserver, "no-gang") == 1
