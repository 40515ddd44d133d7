"""Property tests: the planner's invariants over random sequences of observed states.

A random job runs in the in-memory ``Cluster`` while random kubelet, Volcano and user moves
happen between passes: pods change phase, crash and restart, get deleted by someone else, the
PodGroup changes phase, the job is suspended, resumed or scaled, time passes. After every pass:

* never two pods for one index (the cluster refuses a second pod of the same name);
* a job that was finished before the pass gets only cleanup: pod and service deletions,
  PodGroup deletion and TTL (DeleteJob), and its conditions do not change;
* Running and Restarting are never both present, nor Succeeded and Failed (D6);
* a terminal condition never leaves.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfjob.planner import DeleteJob, DeletePod, DeletePodGroup, DeleteService
from tfjob.planner.conditions import is_finished
from tfjob.settings import Settings

from .builders import NO_GANG, VOLCANO, at, make_job, replica
from .cluster import Cluster

POLICIES = ["Never", "OnFailure", "Always", "ExitCode"]
CLEANUP_ACTIONS = (DeletePod, DeleteService, DeletePodGroup, DeleteJob)

jobs = st.fixed_dictionaries(
    {
        "workers": st.integers(0, 3),
        "ps": st.integers(0, 2),
        "chief": st.booleans(),
        "worker_policy": st.sampled_from(POLICIES),
        "ps_policy": st.sampled_from(POLICIES),
        "backoff": st.sampled_from([None, 0, 2, 4]),
        "deadline": st.sampled_from([None, 30, 200]),
        "clean": st.sampled_from(["None", "Running", "All"]),
        "ttl": st.sampled_from([None, 0, 20]),
        "all_workers": st.booleans(),
        "gang": st.booleans(),
    }
)

pod_states = st.sampled_from(
    [
        ("Pending", None, None),
        ("Running", None, None),
        ("Running", None, None),
        ("Running", None, None),
        ("Running", None, "CrashLoopBackOff"),
        ("Running", 1, None),
        ("Succeeded", 0, None),
        ("Failed", 1, None),
        ("Failed", 137, None),
        ("Failed", None, None),
    ]
)
PODGROUP_PHASES = ["", "Pending", "Inqueue", "Running", "Running", "Unknown"]
pod_moves = st.tuples(st.just("pod"), st.integers(0, 7), pod_states, st.integers(0, 3))
# Weighted towards pod changes, the moves that drive a job through its states.
moves = st.one_of(
    pod_moves,
    pod_moves,
    pod_moves,
    pod_moves,
    st.tuples(st.just("podgroup"), st.sampled_from(PODGROUP_PHASES)),
    st.tuples(st.just("delete"), st.integers(0, 7)),
    st.tuples(st.just("delete"), st.integers(0, 7)),
    st.tuples(
        st.just("gone"),
    ),
    st.tuples(st.just("suspend"), st.sampled_from([True, False, False])),
    st.tuples(st.just("scale"), st.integers(0, 3)),
    st.tuples(st.just("wait"), st.integers(1, 60)),
)


def _job(spec: dict[str, Any]) -> Any:
    replicas: dict[str, dict[str, Any]] = {}
    if spec["chief"]:
        replicas["Chief"] = replica(1, spec["worker_policy"])
    if spec["workers"] or not replicas:
        replicas["Worker"] = replica(spec["workers"], spec["worker_policy"])
    if spec["ps"]:
        replicas["PS"] = replica(spec["ps"], spec["ps_policy"])
    run_policy: dict[str, Any] = {"cleanPodPolicy": spec["clean"]}
    fields = {
        "backoff": "backoffLimit",
        "deadline": "activeDeadlineSeconds",
        "ttl": "ttlSecondsAfterFinished",
    }
    for key, field in fields.items():
        if spec[key] is not None:
            run_policy[field] = spec[key]
    extra: dict[str, Any] = {"successPolicy": "AllWorkers"} if spec["all_workers"] else {}
    return make_job(replicas, run_policy=run_policy, **extra)


def _move(cluster: Cluster, move: tuple[Any, ...]) -> None:
    names = sorted(cluster.pods)
    kind = move[0]
    if kind == "pod" and names:
        _, which, (phase, exit_code, waiting), restarts = move
        cluster.set_pod(
            names[which % len(names)], phase, exit_code=exit_code, waiting=waiting, restarts=restarts
        )
    elif kind == "podgroup" and cluster.podgroup is not None:
        cluster.set_podgroup_phase(move[1])
    elif kind == "delete" and names:  # someone else deletes a pod: it terminates first
        cluster.pods[names[move[1] % len(names)]]["metadata"]["deletionTimestamp"] = "2026-11-29T10:41:00Z"
    elif kind == "gone":
        cluster.finish_deletions()
    elif kind == "suspend" and cluster.job is not None:
        cluster.job["spec"].setdefault("runPolicy", {})["suspend"] = move[1]
    elif kind == "scale" and cluster.job is not None:
        if "Worker" in cluster.job["spec"]["tfReplicaSpecs"]:
            cluster.set_replicas("Worker", move[1])
    elif kind == "wait":
        cluster.now = cluster.now + (at(move[1]) - at(0))


def _pairs(conditions: list[dict[str, Any]]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in conditions}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=jobs, steps=st.lists(moves, max_size=30), graceful=st.booleans())
def test_planner_invariants_hold_over_random_histories(
    spec: dict[str, Any], steps: list[tuple[Any, ...]], graceful: bool
) -> None:
    gang: Settings = VOLCANO if spec["gang"] else NO_GANG
    cluster = Cluster(_job(spec), gang, graceful_delete=graceful)
    terminal_seen: set[str] = set()
    for move in [("wait", 1), *steps]:
        if cluster.job is None:
            break
        _move(cluster, move)
        before = cluster.job.get("status", {}).get("conditions", [])
        was_finished = is_finished(before)
        result = cluster.reconcile()  # raises on a second pod for one name/index
        conditions = result.status.get("conditions", [])
        present = _pairs(conditions)  # type: ignore[arg-type]
        assert not ({"Running", "Restarting"} <= {c["type"] for c in conditions})
        assert not (present.get("Succeeded") == "True" and present.get("Failed") == "True")
        for terminal in terminal_seen:
            assert present.get(terminal) == "True", f"{terminal} left: {conditions}"
        terminal_seen |= {t for t in ("Succeeded", "Failed") if present.get(t) == "True"}
        if was_finished:
            assert all(isinstance(action, CLEANUP_ACTIONS) for action in result.actions), result.actions
            assert conditions == before
        names = [a.name for a in result.actions if type(a).__name__ == "CreatePod"]
        assert len(names) == len(set(names))
