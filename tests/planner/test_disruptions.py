"""D18: pods ended by a disruption never count toward backoffLimit; a collective restarts as a gang.

Each rule of ``tfjob.planner.disruption`` over several passes of the in-memory cluster, which
carries the planner's actions out and lets the test play the kubelet, Volcano and an evictor.
"""

from __future__ import annotations

import copy
from typing import Any

from tfjob.planner import CreatePod, DeletePod

from .builders import VOLCANO, action_names, at, make_job, replica, run, running_status
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


def _collective(run_policy: dict[str, Any] | None = None, **kwargs: Any) -> Cluster:
    policy = run_policy if run_policy is not None else {"backoffLimit": 0}
    job = make_job({"Worker": replica(3, "Never")}, run_policy=policy, **kwargs)
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


# --- a job that fails while its gang restarts ---------------------------------------------------


def test_a_job_whose_deadline_passes_during_a_gang_restart_fails_without_the_restart_marker() -> None:
    cluster = _collective(run_policy={"backoffLimit": 0, "activeDeadlineSeconds": 600})
    _evict(cluster, "tj-worker-1")
    cluster.reconcile()
    assert "gangRestart" in _status(cluster)

    cluster.reconcile(at(601))
    assert cluster.conditions[-1] == ("Failed", "True")
    assert "active longer than specified deadline" in condition_message(cluster, "Failed")
    assert "gangRestart" not in _status(cluster)
    assert _status(cluster)["disruptions"] == 1  # history stays
    # Later passes of the finished job leave it so.
    cluster.reconcile(at(700))
    assert "gangRestart" not in _status(cluster)


def _timed_collective(timeout: int) -> Cluster:
    """A collective with a gang timeout, admitted 5 s after it was created, running."""
    job = make_job(
        {"Worker": replica(3, "Never")},
        run_policy={"backoffLimit": 0, "schedulingPolicy": {"scheduleTimeoutSeconds": timeout}},
    )
    cluster = Cluster(job, VOLCANO, graceful_delete=True)
    cluster.reconcile()
    cluster.set_podgroup_phase("Inqueue")
    cluster.reconcile(at(5))
    for name in list(cluster.pods):
        cluster.set_pod(name, "Running")
    cluster.set_podgroup_phase("Running")
    cluster.reconcile()
    assert cluster.conditions[-1] == ("Running", "True")
    return cluster


def _readmission_wait(cluster: Cluster, evicted_at: float) -> None:
    """A worker is preempted; the old gang goes; the PodGroup waits Pending, nobody admits it."""
    _evict(cluster, "tj-worker-1")
    cluster.reconcile(at(evicted_at))
    cluster.finish_deletions()
    cluster.set_podgroup_phase("Pending")
    cluster.reconcile(at(evicted_at + 10))  # the wait for re-admission begins
    assert cluster.conditions[-1] == ("Restarting", "True")
    assert "gangRestart" in _status(cluster)


def test_a_gang_not_readmitted_in_time_fails_the_job_without_the_restart_marker() -> None:
    cluster = _timed_collective(60)
    _readmission_wait(cluster, 100)
    assert not any(isinstance(a, CreatePod) for a in cluster.reconcile(at(160)).actions)
    assert cluster.conditions[-1] == ("Restarting", "True")

    failed = cluster.reconcile(at(170))
    assert cluster.conditions[-1] == ("Failed", "True")
    assert "within scheduleTimeoutSeconds (60s)" in condition_message(cluster, "Failed")
    assert "DeletePodGroup:tj" in action_names(failed)
    assert "gangRestart" not in _status(cluster)
    assert _status(cluster)["disruptions"] == 1


def test_the_gang_timeout_of_a_second_restart_counts_from_its_own_wait() -> None:
    cluster = _timed_collective(60)
    _readmission_wait(cluster, 100)
    cluster.set_podgroup_phase("Inqueue")
    cluster.reconcile(at(120))
    for name in list(cluster.pods):
        cluster.set_pod(name, "Running")
    cluster.set_podgroup_phase("Running")
    cluster.reconcile(at(125))
    assert cluster.conditions[-1] == ("Running", "True")

    _readmission_wait(cluster, 1000)  # long after the first restart's wait
    cluster.reconcile(at(1069))
    assert cluster.conditions[-1] == ("Restarting", "True")
    cluster.reconcile(at(1070))
    assert cluster.conditions[-1] == ("Failed", "True")
    assert _status(cluster)["disruptions"] == 2


def test_a_finished_job_with_a_stale_restart_marker_loses_it() -> None:
    """An older tfgang could leave ``gangRestart`` on a job that failed during the restart."""
    status = running_status(["Created", "Failed"])
    status["gangRestart"] = {"pod": "tj-worker-1", "reason": "PreemptionByScheduler"}
    status["disruptedPods"] = [{"name": "tj-worker-1", "uid": "uid-tj-worker-1"}]
    status["disruptions"] = 1
    job = make_job({"Worker": replica(2, "Never")}, status=status)
    result = run(job)
    assert "gangRestart" not in result.status
    assert "disruptedPods" not in result.status
    assert result.status["disruptions"] == 1


# --- every disruption counts once, in per-replica mode too -----------------------------------------


def _ps_job(workers: int = 2, **run_policy: Any) -> Cluster:
    job = make_job(
        {"PS": replica(1, "Never"), "Worker": replica(workers, "Never")},
        run_policy={"backoffLimit": 0, **run_policy},
    )
    cluster = Cluster(job, VOLCANO, graceful_delete=True)
    _running(cluster)
    return cluster


def _restarted(cluster: Cluster) -> Cluster:
    """A new controller: it plans from the status the old one wrote, and what the caches hold."""
    assert cluster.job is not None
    successor = Cluster(cluster.job, cluster.settings, graceful_delete=True)
    successor.pods = copy.deepcopy(cluster.pods)
    successor.services = copy.deepcopy(cluster.services)
    successor.podgroup = copy.deepcopy(cluster.podgroup)
    successor.now = cluster.now
    successor._uids = 100  # its creates get uids of their own
    return successor


def test_an_eviction_in_a_ps_job_counts_once_over_every_pass_and_a_controller_restart() -> None:
    cluster = _ps_job()
    _evict(cluster, "tj-worker-1", condition=None)  # already terminating when first seen
    evicted_uid = cluster.pods["tj-worker-1"]["metadata"]["uid"]
    for _ in range(3):
        assert cluster.reconcile().actions == ()
        assert _status(cluster)["disruptions"] == 1
    assert _status(cluster)["disruptedPods"] == [{"name": "tj-worker-1", "uid": evicted_uid}]

    cluster = _restarted(cluster)
    for _ in range(2):
        cluster.reconcile()
        assert _status(cluster)["disruptions"] == 1

    cluster.finish_deletions()
    assert action_names(cluster.reconcile()) == ["CreatePod:tj-worker-1"]
    status = _status(cluster)
    assert status["disruptions"] == 1
    assert "disruptedPods" not in status
    assert "restartCounts" not in status
    assert cluster.conditions[-1] != ("Failed", "True")

    # The replacement is a new pod: disrupted in its turn, it counts again.
    cluster.set_pod("tj-worker-1", "Running")
    cluster.reconcile()
    _evict(cluster, "tj-worker-1")
    cluster.reconcile()
    cluster.reconcile()
    assert _status(cluster)["disruptions"] == 2


def test_a_preempted_pod_the_planner_deletes_counts_once() -> None:
    cluster = _ps_job()
    cluster.pods["tj-worker-0"]["status"].setdefault("conditions", []).append(dict(PREEMPTED))
    assert action_names(cluster.reconcile()) == ["DeletePod:tj-worker-0"]
    assert _status(cluster)["disruptions"] == 1
    cluster.pods["tj-worker-0"]["status"]["phase"] = "Failed"  # the kubelet stops it
    cluster.reconcile()
    cluster = _restarted(cluster)
    cluster.reconcile()
    assert _status(cluster)["disruptions"] == 1
    cluster.finish_deletions()
    assert action_names(cluster.reconcile()) == ["CreatePod:tj-worker-0"]
    assert _status(cluster)["disruptions"] == 1
    assert "disruptedPods" not in _status(cluster)


def test_a_failed_delete_of_a_preempted_pod_does_not_count_it_twice() -> None:
    """The controller writes the status only once every action went through: a delete that fails
    leaves the old status and the pod, and the next pass counts the disruption then, once."""
    cluster = _ps_job()
    cluster.pods["tj-worker-0"]["status"].setdefault("conditions", []).append(dict(PREEMPTED))
    assert cluster.job is not None
    unwritten = run(
        cluster.job,
        list(cluster.pods.values()),
        svcs=list(cluster.services.values()),
        group=cluster.podgroup,
        settings=VOLCANO,
    )
    assert action_names(unwritten) == ["DeletePod:tj-worker-0"]
    assert unwritten.status["disruptions"] == 1
    assert "disruptions" not in _status(cluster)
    assert action_names(cluster.reconcile()) == ["DeletePod:tj-worker-0"]
    assert _status(cluster)["disruptions"] == 1
    cluster.reconcile()
    assert _status(cluster)["disruptions"] == 1


def test_two_pods_disrupted_in_one_pass_count_two() -> None:
    cluster = _ps_job(workers=3)
    _evict(cluster, "tj-worker-0", condition=None)
    cluster.pods["tj-worker-2"]["status"].setdefault("conditions", []).append(dict(PREEMPTED))
    assert action_names(cluster.reconcile()) == ["DeletePod:tj-worker-2"]
    assert _status(cluster)["disruptions"] == 2
    assert [entry["name"] for entry in _status(cluster)["disruptedPods"]] == ["tj-worker-0", "tj-worker-2"]
    cluster.reconcile()
    assert _status(cluster)["disruptions"] == 2
    cluster.finish_deletions()
    assert sorted(action_names(cluster.reconcile())) == ["CreatePod:tj-worker-0", "CreatePod:tj-worker-2"]
    assert _status(cluster)["disruptions"] == 2


def test_a_disruption_of_a_collective_with_gang_restart_off_counts_once() -> None:
    cluster = _collective(annotations={GANG_RESTART: "false"})
    _evict(cluster, "tj-worker-1")
    cluster.reconcile()
    cluster.reconcile()
    assert _status(cluster)["disruptions"] == 1


def test_a_gang_restart_counts_one_over_every_pass_and_a_controller_restart() -> None:
    cluster = _collective()
    _evict(cluster, "tj-worker-0")
    _evict(cluster, "tj-worker-2", condition=None)
    cluster.reconcile()
    cluster = _restarted(cluster)
    cluster.reconcile()
    assert _status(cluster)["disruptions"] == 1
    assert "disruptedPods" not in _status(cluster)  # the restart marker is the gang's memory
    cluster.finish_deletions()
    cluster.set_podgroup_phase("Inqueue")
    cluster.reconcile()
    assert "gangRestart" not in _status(cluster)
    assert _status(cluster)["disruptions"] == 1


def test_a_ps_job_failing_by_deadline_while_a_pod_is_replaced_forgets_the_pod() -> None:
    cluster = _ps_job(activeDeadlineSeconds=600)
    _evict(cluster, "tj-worker-1", condition=None)
    cluster.reconcile()
    assert "disruptedPods" in _status(cluster)
    cluster.reconcile(at(601))
    assert cluster.conditions[-1] == ("Failed", "True")
    assert "disruptedPods" not in _status(cluster)
    assert _status(cluster)["disruptions"] == 1


def condition_message(cluster: Cluster, type_: str) -> str:
    assert cluster.job is not None
    for found in cluster.job.get("status", {}).get("conditions", []):
        if found.get("type") == type_:
            return str(found.get("message"))
    raise AssertionError(f"no {type_} condition")


def test_a_junk_memory_of_counted_pods_is_dropped_and_counts_nothing() -> None:
    """Anyone allowed to write the status may have left anything there: it is read as far as it
    names pods that exist, and the rest goes."""
    cluster = _ps_job()
    assert cluster.job is not None
    cluster.job["status"]["disruptedPods"] = [  # type: ignore[typeddict-item]
        "tj-worker-0",
        {"name": 7},
        *({"name": f"tj-worker-{n}", "uid": f"gone-{n}"} for n in range(1000)),
    ]
    cluster.reconcile()
    status = _status(cluster)
    assert "disruptedPods" not in status
    assert "disruptions" not in status


def test_a_suspended_job_forgets_its_counted_pods_once_they_are_gone() -> None:
    cluster = _ps_job()
    _evict(cluster, "tj-worker-1", condition=None)
    cluster.reconcile()
    assert cluster.job is not None
    cluster.job["spec"]["runPolicy"]["suspend"] = True
    cluster.reconcile()
    assert "disruptedPods" in _status(cluster)  # still terminating
    cluster.finish_deletions()
    cluster.reconcile()
    assert "disruptedPods" not in _status(cluster)
    assert _status(cluster)["disruptions"] == 1
