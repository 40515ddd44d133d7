"""The seed transcript's three experiments as planner scenarios (normal, worker failure, PS failure).

Each feeds the transcript's sequence of observed pod and PodGroup states in, pass by pass, and
checks the conditions and actions that come out, ending in the transcript's final state.
"""

from __future__ import annotations

from tfjob.planner import CreatePod, CreatePodGroup, CreateService, DeletePod, DeletePodGroup, DeleteService

from .builders import at, seed_job
from .cluster import Cluster

PODS = ["tftest-ps-0", "tftest-worker-0", "tftest-worker-1", "tftest-worker-2"]


def _start(cluster: Cluster) -> None:
    """Creation -> PodGroup Inqueue -> pods scheduled -> all Running, as in every experiment."""
    first = cluster.reconcile(at(0))
    assert [type(action) for action in first.actions] == [CreatePodGroup]
    assert cluster.podgroup is not None and cluster.podgroup["spec"]["minMember"] == 4
    assert cluster.podgroup["spec"]["queue"] == "default"
    assert cluster.conditions == [("Created", "True")]
    assert cluster.reconcile(at(0.5)).actions == ()  # phase "" -> held back
    cluster.set_podgroup_phase("Inqueue")
    admitted = cluster.reconcile(at(1))
    assert sorted(a.name for a in admitted.actions if isinstance(a, CreatePod)) == PODS
    assert sorted(a.name for a in admitted.actions if isinstance(a, CreateService)) == PODS
    assert cluster.job is not None and cluster.job["status"]["startTime"] == "2026-11-29T10:41:01Z"
    cluster.set_podgroup_phase("Running")
    assert cluster.reconcile(at(1.5)).actions == ()
    for name in PODS:  # scheduled on las1, then ContainerCreating: nothing to do, nothing to write
        cluster.set_pod(name, "Pending")
    writes = cluster.status_writes
    assert cluster.reconcile(at(2)).actions == ()
    assert cluster.status_writes == writes
    for name in PODS:
        cluster.set_pod(name, "Running")
    cluster.reconcile(at(3))
    assert cluster.conditions == [("Created", "True"), ("Running", "True")]


def test_seed_normal_run_succeeds_and_deletes_only_the_podgroup() -> None:
    cluster = Cluster(seed_job())
    _start(cluster)
    cluster.set_pod("tftest-ps-0", "Running", exit_code=0)  # Always: the PS container completes in place
    cluster.set_pod("tftest-worker-2", "Succeeded", exit_code=0)
    cluster.set_pod("tftest-worker-1", "Succeeded", exit_code=0)
    assert cluster.reconcile(at(32)).actions == ()
    assert cluster.conditions[-1] == ("Running", "True")
    cluster.set_pod("tftest-worker-0", "Succeeded", exit_code=0)
    done = cluster.reconcile(at(35))
    assert [type(action) for action in done.actions] == [DeletePodGroup]
    assert cluster.conditions == [("Created", "True"), ("Running", "False"), ("Succeeded", "True")]
    assert cluster.job is not None
    assert cluster.job["status"]["replicaStatuses"] == {"PS": {"succeeded": 1}, "Worker": {"succeeded": 3}}
    assert sorted(cluster.pods) == PODS  # cleanPodPolicy None keeps every pod
    assert cluster.states == ["", "Created", "Running", "Succeeded"]
    assert cluster.reconcile(at(40)).actions == ()


def test_seed_worker_failure_fails_by_backoff_limit_and_deletes_every_pod_d3() -> None:
    cluster = Cluster(seed_job())
    _start(cluster)
    cluster.set_pod("tftest-worker-0", "Running", exit_code=1)  # 13s: Error, restart in place
    cluster.reconcile(at(13))
    cluster.set_pod("tftest-worker-0", "Running", restarts=1)
    cluster.reconcile(at(14))
    cluster.set_pod("tftest-worker-0", "Running", exit_code=1, restarts=1)
    cluster.reconcile(at(24))
    cluster.set_pod("tftest-ps-0", "Running", exit_code=0)
    cluster.set_pod("tftest-worker-1", "Succeeded", exit_code=0)
    cluster.set_pod("tftest-worker-2", "Succeeded", exit_code=0)
    cluster.reconcile(at(32))
    cluster.set_pod("tftest-ps-0", "Running", restarts=1)
    cluster.reconcile(at(33))
    cluster.set_pod("tftest-worker-0", "Running", waiting="CrashLoopBackOff", restarts=1)
    crashloop = cluster.reconcile(at(36))
    assert ("Warning", "CrashLoopBackOff") in [(e.type, e.reason) for e in crashloop.events]
    assert cluster.conditions[-1] == ("Running", "True")  # in-place restarts never show Restarting
    cluster.set_pod("tftest-worker-0", "Running", restarts=2)  # 2 + ps-0's 1 = backoffLimit 3
    failed = cluster.reconcile(at(37))
    assert cluster.conditions == [("Created", "True"), ("Running", "False"), ("Failed", "True")]
    message = "Job tftest has failed because it has reached the specified backoff limit"
    assert cluster.job is not None and cluster.job["status"]["conditions"][-1]["message"] == message
    assert sorted(a.name for a in failed.actions if isinstance(a, DeletePod)) == PODS
    assert sorted(a.name for a in failed.actions if isinstance(a, DeleteService)) == PODS
    assert any(isinstance(a, DeletePodGroup) for a in failed.actions)
    assert cluster.pods == {} and cluster.services == {} and cluster.podgroup is None
    assert cluster.states == ["", "Created", "Running", "Failed"]


def test_seed_ps_failure_succeeds_and_leaves_ps_running_d7() -> None:
    cluster = Cluster(seed_job())
    _start(cluster)
    cluster.set_pod("tftest-ps-0", "Running", exit_code=1)  # 17s: PS Error
    cluster.reconcile(at(17))
    cluster.set_pod("tftest-ps-0", "Running", restarts=1)
    cluster.reconcile(at(18))
    assert cluster.conditions[-1] == ("Running", "True")
    for name in ("tftest-worker-0", "tftest-worker-1", "tftest-worker-2"):
        cluster.set_pod(name, "Succeeded", exit_code=0)
    cluster.set_pod("tftest-ps-0", "Running", exit_code=1, restarts=1)
    done = cluster.reconcile(at(35))
    assert [type(action) for action in done.actions] == [DeletePodGroup]
    assert cluster.conditions == [("Created", "True"), ("Running", "False"), ("Succeeded", "True")]
    for restarts in (2, 3, 4):  # the PS keeps crash-looping after the job succeeded
        cluster.set_pod("tftest-ps-0", "Running", waiting="CrashLoopBackOff", restarts=restarts)
        assert cluster.reconcile(at(40 + restarts * 30)).actions == ()
    assert "tftest-ps-0" in cluster.pods
    assert cluster.states == ["", "Created", "Running", "Succeeded"]


def test_write_budget_is_four_status_writes_from_creation_to_succeeded() -> None:
    cluster = Cluster(seed_job())
    cluster.reconcile(at(0))
    cluster.reconcile(at(0.3))
    cluster.set_podgroup_phase("Pending")
    cluster.reconcile(at(0.6))
    cluster.set_podgroup_phase("Inqueue")
    cluster.reconcile(at(1))
    cluster.reconcile(at(1.2))  # the pods' creation events
    cluster.set_podgroup_phase("Running")
    cluster.reconcile(at(1.5))
    for name in PODS:
        cluster.set_pod(name, "Running")
    cluster.reconcile(at(2))
    cluster.reconcile(at(2.5))
    for name in PODS:
        cluster.set_pod(name, "Succeeded", exit_code=0)
    cluster.reconcile(at(33))
    cluster.reconcile(at(34))
    assert cluster.status_writes == 4
    assert cluster.states == ["", "Created", "Running", "Succeeded"]
