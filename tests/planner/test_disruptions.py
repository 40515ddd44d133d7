"""D18: pods ended by a disruption never count toward backoffLimit; a collective restarts as a gang.

Each rule of ``tfjob.planner.disruption`` over several passes of the in-memory cluster, which
carries the planner's actions out and lets the test play the kubelet, Volcano and an evictor.
"""

from __future__ import annotations

from typing import Any

from tfjob.planner import CreatePod, DeletePod

from .builders import VOLCANO, action_names, make_job, replica
from .cluster import Cluster

PREEMPTED = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "volcano: preempting to accommodate a higher priority pod",
}
GANG_RESTART = "tfgang.io/gang-restart"


def _running(cluster: Cluster) -> None:
    cluster.reconcile()
    cluster.set_podgroup_phase("Inqueue")
    cluster.reconcile()
    for name in list(cluster.pods):
        cluster.set_pod(name, "Running")
    cluster.set_podgroup_phase("Running")
    cluster.reconcile()
    assert cluster.conditions[-1] == ("Running", "True")


def _evict(cluster: Cluster, name: str, condition: dict[str, Any] | None = PREEMPTED) -> None:
    """What Volcano's evictor (and kube's Eviction API on newer releases) does: the condition, then a
    graceful delete; the kubelet then stops the container and the pod ends Failed."""
    pod = cluster.pods[name]
    if condition is not None:
        pod["status"].setdefault("conditions", []).append(dict(condition))
    pod["metadata"]["deletionTimestamp"] = "2026-11-29T10:42:00Z"
    pod["status"]["phase"] = "Failed"
    pod["status"]["containerStatuses"][0] = {
        "name": "tensorflow",
        "state": {"terminated": {"exitCode": 143, "reason": "Error"}},
        "restartCount": 0,
    }


def _collective(**kwargs: Any) -> Cluster:
    job = make_job({"Worker": replica(3, "Never")}, run_policy={"backoffLimit": 0}, **kwargs)
    cluster = Cluster(job, VOLCANO, graceful_delete=True)
    _running(cluster)
    return cluster


def _status(cluster: Cluster) -> dict[str, Any]:
    assert cluster.job is not None
    return dict(cluster.job.get("status") or {})


def test_a_preempted_worker_of_a_collective_restarts_the_whole_gang_without_touching_backoff() -> None:
    cluster = _collective()
    _evict(cluster, "tj-worker-1")

    first = cluster.reconcile()
    assert sorted(a.name for a in first.actions if isinstance(a, DeletePod)) == ["tj-worker-0", "tj-worker-2"]
    assert not any(isinstance(a, CreatePod) for a in first.actions)
    status = _status(cluster)
    assert status["gangRestart"] == {"pod": "tj-worker-1", "reason": "PreemptionByScheduler"}
    assert status["disruptions"] == 1
    assert "restartCounts" not in status
    restarting = status["conditions"][-1]
    assert (restarting["type"], restarting["status"], restarting["reason"]) == (
        "Restarting",
        "True",
        "PreemptionByScheduler",
    )
    assert restarting["message"] == (
        "TFJob ns/tj is restarting as a gang because pod tj-worker-1 was disrupted "
        "(PreemptionByScheduler): volcano: preempting to accommodate a higher priority pod"
    )
    assert [(e.type, e.reason) for e in first.events] == [("Warning", "TFJobRestarting")]

    # The old pods end Failed while they terminate: nothing fails the job, nothing is created.
    for name in ("tj-worker-0", "tj-worker-2"):
        cluster.pods[name]["status"]["phase"] = "Failed"
    assert cluster.reconcile().actions == ()
    assert cluster.conditions[-1] == ("Restarting", "True")

    # All gone, the PodGroup still says Running (Volcano has not seen it empty yet): wait.
    cluster.finish_deletions()
    waiting = cluster.reconcile()
    assert not any(isinstance(a, CreatePod) for a in waiting.actions)
    cluster.set_podgroup_phase("Pending")
    assert not any(isinstance(a, CreatePod) for a in cluster.reconcile().actions)

    # Volcano admits the gang again: every pod is created in one pass and the marker goes.
    cluster.set_podgroup_phase("Inqueue")
    again = cluster.reconcile()
    assert sorted(a.name for a in again.actions if isinstance(a, CreatePod)) == [
        "tj-worker-0",
        "tj-worker-1",
        "tj-worker-2",
    ]
    assert "gangRestart" not in _status(cluster)
    assert _status(cluster)["disruptions"] == 1

    for name in list(cluster.pods):
        cluster.set_pod(name, "Running")
    cluster.set_podgroup_phase("Running")
    cluster.reconcile()
    assert cluster.conditions[-1] == ("Running", "True")
    cluster.set_pod("tj-worker-0", "Succeeded", exit_code=0)
    cluster.reconcile()
    assert cluster.conditions[-1] == ("Succeeded", "True")
    assert _status(cluster)["disruptions"] == 1


def test_a_worker_that_fails_by_itself_still_fails_the_job_at_backoff_limit_zero() -> None:
    """The check a disruption is kept out of: a Failed pod nobody disrupted is a new failure."""
    cluster = _collective()
    cluster.set_pod("tj-worker-1", "Failed", exit_code=1)
    cluster.reconcile()
    assert cluster.conditions[-1] == ("Failed", "True")


def test_a_pod_deleted_by_someone_else_restarts_the_gang_with_reason_pod_deleted() -> None:
    cluster = _collective()
    _evict(cluster, "tj-worker-2", condition=None)  # kube-apiserver v1.20's Eviction API: no condition
    cluster.reconcile()
    status = _status(cluster)
    assert status["gangRestart"] == {"pod": "tj-worker-2", "reason": "PodDeleted"}
    assert status["conditions"][-1]["reason"] == "PodDeleted"
    assert cluster.conditions[-1] == ("Restarting", "True")


def test_a_program_failure_is_not_a_disruption_even_if_the_pod_is_then_deleted() -> None:
    cluster = _collective()
    cluster.set_pod("tj-worker-1", "Failed", exit_code=1)
    cluster.pods["tj-worker-1"]["metadata"]["deletionTimestamp"] = "2026-11-29T10:42:00Z"
    cluster.reconcile()
    assert "gangRestart" not in _status(cluster)
    assert cluster.conditions[-1] == ("Failed", "True")


def test_the_gang_restart_counts_one_disruption_however_many_pods_were_preempted() -> None:
    cluster = _collective()
    for name in ("tj-worker-0", "tj-worker-1", "tj-worker-2"):
        _evict(cluster, name)
    cluster.reconcile()
    cluster.reconcile()
    assert _status(cluster)["disruptions"] == 1
    assert _status(cluster)["gangRestart"]["pod"] == "tj-worker-0"


def test_a_second_disruption_after_the_restart_counts_again() -> None:
    cluster = _collective()
    _evict(cluster, "tj-worker-1")
    cluster.reconcile()
    cluster.finish_deletions()
    cluster.set_podgroup_phase("Inqueue")
    cluster.reconcile()
    for name in list(cluster.pods):
        cluster.set_pod(name, "Running")
    cluster.set_podgroup_phase("Running")
    cluster.reconcile()
    _evict(cluster, "tj-worker-0")
    cluster.reconcile()
    assert _status(cluster)["disruptions"] == 2


def test_a_ps_job_replaces_only_the_disrupted_worker() -> None:
    job = make_job({"PS": replica(1, "Never"), "Worker": replica(2, "Never")}, run_policy={"backoffLimit": 0})
    cluster = Cluster(job, VOLCANO, graceful_delete=True)
    _running(cluster)
    # Preempted but not yet deleted (the condition comes first): tfgang deletes it.
    cluster.pods["tj-worker-1"]["status"].setdefault("conditions", []).append(dict(PREEMPTED))
    first = cluster.reconcile()
    assert action_names(first) == ["DeletePod:tj-worker-1"]
    assert [(e.type, e.reason) for e in first.events] == [("Warning", "TFJobRestarting")]
    assert "replaces pod tj-worker-1, disrupted (PreemptionByScheduler)" in first.events[0].message
    assert "gangRestart" not in _status(cluster)
    assert "restartCounts" not in _status(cluster)
    cluster.pods["tj-worker-1"]["status"]["phase"] = "Failed"
    assert cluster.reconcile().actions == ()
    assert cluster.conditions[-1] != ("Failed", "True")
    cluster.finish_deletions()
    assert action_names(cluster.reconcile()) == ["CreatePod:tj-worker-1"]
    assert "tj-ps-0" in cluster.pods and "tj-worker-0" in cluster.pods


def test_the_annotation_turns_gang_restart_on_for_a_ps_job() -> None:
    job = make_job(
        {"PS": replica(1, "Never"), "Worker": replica(2, "Never")}, annotations={GANG_RESTART: "true"}
    )
    cluster = Cluster(job, VOLCANO, graceful_delete=True)
    _running(cluster)
    _evict(cluster, "tj-worker-0")
    first = cluster.reconcile()
    assert sorted(a.name for a in first.actions if isinstance(a, DeletePod)) == ["tj-ps-0", "tj-worker-1"]
    assert _status(cluster)["gangRestart"]["pod"] == "tj-worker-0"


def test_the_annotation_turns_gang_restart_off_for_a_collective() -> None:
    cluster = _collective(annotations={GANG_RESTART: "false"})
    _evict(cluster, "tj-worker-1")
    assert cluster.reconcile().actions == ()  # already going: nothing to delete, nothing counted
    assert "gangRestart" not in _status(cluster)
    assert cluster.conditions[-1] != ("Failed", "True")
    cluster.finish_deletions()
    assert action_names(cluster.reconcile()) == ["CreatePod:tj-worker-1"]


def test_a_gang_restart_without_volcano_recreates_once_the_pods_are_gone() -> None:
    from tfjob.settings import Settings

    job = make_job({"Worker": replica(2, "Never")})
    cluster = Cluster(job, Settings(gang_scheduler_name=""), graceful_delete=True)
    cluster.reconcile()
    for name in list(cluster.pods):
        cluster.set_pod(name, "Running")
    cluster.reconcile()
    _evict(cluster, "tj-worker-0")
    assert action_names(cluster.reconcile()) == ["DeletePod:tj-worker-1"]
    cluster.finish_deletions()
    assert sorted(action_names(cluster.reconcile())) == ["CreatePod:tj-worker-0", "CreatePod:tj-worker-1"]
