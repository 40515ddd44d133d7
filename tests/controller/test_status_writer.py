"""Status writes against the sandbox API server: only changes are sent, and a field the server
does not keep is not sent again and again (no hot loop)."""

from __future__ import annotations

from typing import Any

from controller.metrics import ControllerMetrics
from controller.resources import TFJOBS
from controller.status import StatusWriter
from controller.writes import OwnWrites
from kube.api import KubeApi


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
