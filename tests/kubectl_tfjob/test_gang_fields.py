"""``kubectl tfjob explain`` and ``status`` show the per-role gang (minTaskMember), the network
topology and the disruption counter (D17-D19)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from kubectl_tfjob.explain import explain
from kubectl_tfjob.render import explain_text, status_text
from kubectl_tfjob.status import job_status
from tfjob.settings import Settings

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
JOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": {
        "name": "tj",
        "namespace": "ns",
        "uid": "uid-1",
        "annotations": {"tfgang.io/network-topology": '{"mode": "hard", "highestTierAllowed": 1}'},
    },
    "spec": {
        "tfReplicaSpecs": {
            role: {
                "replicas": count,
                "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}},
            }
            for role, count in (("PS", 1), ("Worker", 2))
        }
    },
}


def test_explain_shows_min_task_member_and_the_network_topology() -> None:
    text = explain_text(explain(copy.deepcopy(JOB), Settings()))
    assert "  minTaskMember: ps=1, worker=2\n" in text
    assert "  networkTopology: mode=hard, highestTierAllowed=1\n" in text


def test_status_shows_min_task_member_the_topology_and_the_disruptions() -> None:
    job = copy.deepcopy(JOB)
    job["status"] = {"disruptions": 2}
    podgroup: Any = {
        "metadata": {"name": "tj"},
        "spec": {
            "minMember": 3,
            "minTaskMember": {"ps": 1, "worker": 2},
            "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
            "queue": "default",
        },
        "status": {"phase": "Running"},
    }
    view = job_status(job, [], podgroup, [], Settings(), NOW)
    assert view["restarts"]["disruptions"] == 2
    assert view["gang"]["minTaskMember"] == {"ps": 1, "worker": 2}
    text = status_text(view)
    assert "Restarts: 0 (no backoffLimit set: restarts are not limited), disruptions 2\n" in text
    assert (
        "PodGroup tj: phase Running, minMember 3, minTaskMember {ps=1, worker=2}, "
        "networkTopology {mode=hard, highestTierAllowed=1}, queue default" in text
    )
    job["status"] = {}
    assert "disruptions" not in status_text(job_status(job, [], podgroup, [], Settings(), NOW))
