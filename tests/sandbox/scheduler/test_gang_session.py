"""The pure Volcano session: enqueue, all-or-nothing gang allocation, phases, conditions, events."""

from __future__ import annotations

from typing import Any

from sandbox.scheduler.session import run_session
from sandbox.scheduler.snapshot import build_snapshot

from .factories import hypernode, node, pod, podgroup, queue

NOW = "2026-01-01T00:00:10Z"


def session(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    queues=None,
    hypernodes: list[dict[str, Any]] | None = None,
):
    snapshot = build_snapshot(
        nodes, pods, groups, queues if queues is not None else [queue()], hypernodes or []
    )
    return run_session(snapshot, NOW, "session-1")


def gang_pods(group: str, count: int, **kwargs: Any) -> list[dict[str, Any]]:
    return [pod(f"{group}-{i}", group=group, **kwargs) for i in range(count)]


def test_a_new_podgroup_without_pods_is_enqueued_and_warned_about_missing_tasks() -> None:
    result = session(
        [node("las1")], [], [podgroup("tftest", 4, min_resources={"cpu": "4", "memory": "400Mi"})]
    )

    assert [w.status["phase"] for w in result.podgroup_writes] == ["Inqueue"]
    assert "conditions" not in result.podgroup_writes[0].status  # no pods -> no condition
    assert [(e.type, e.reason, e.message) for e in result.events] == [
        (
            "Warning",
            "Unschedulable",
            "0/0 tasks in gang unschedulable: pod group is not ready, 4 minAvailable",
        )
    ]


def test_a_gang_that_fits_is_bound_all_at_once_and_becomes_running() -> None:
    group = podgroup("tftest", 4, min_resources={"cpu": "4"}, phase="Inqueue")
    result = session([node("las1")], gang_pods("tftest", 4), [group])

    assert sorted((b.name, b.node) for b in result.binds) == [(f"tftest-{i}", "las1") for i in range(4)]
    (write,) = result.podgroup_writes
    assert write.status["phase"] == "Running"
    assert "running" not in write.status  # bound, not yet running: the RUNNINGS column stays empty
    (condition,) = write.status["conditions"]
    assert (condition["type"], condition["reason"]) == (
        "Scheduled",
        "tasks in gang are ready to be scheduled",
    )
    assert [(e.reason, e.message) for e in result.events] == [("Scheduled", "pod group is ready")]


def test_room_for_three_of_four_binds_none_and_marks_the_group_unschedulable() -> None:
    group = podgroup("tftest", 4, phase="Inqueue")
    result = session([node("las1", cpu="3")], gang_pods("tftest", 4), [group])

    assert result.binds == ()
    (write,) = result.podgroup_writes
    assert write.status["phase"] == "Inqueue"
    (condition,) = write.status["conditions"]
    assert condition["type"] == "Unschedulable"
    assert condition["reason"] == "NotEnoughResources"
    assert condition["message"].startswith(
        "1/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; "
        "Pending: 1 Unschedulable, 3 Schedulable. Origin reason is tftest-3: "
        "0/1 nodes are unavailable: 1 Insufficient cpu."
    )
    reasons = {c.name: c.condition["reason"] for c in result.pod_conditions}
    assert reasons == {
        "tftest-0": "Schedulable",
        "tftest-1": "Schedulable",
        "tftest-2": "Schedulable",
        "tftest-3": "Unschedulable",
    }
    assert sum(1 for e in result.events if e.reason == "FailedScheduling") == 4
    assert any(
        e.kind == "PodGroup" and e.type == "Warning" and e.reason == "Unschedulable" for e in result.events
    )


def test_two_gangs_that_fit_alone_but_not_together_never_both_start_partially() -> None:
    first = podgroup("a", 3, phase="Inqueue", created="2026-01-01T00:00:01Z")
    second = podgroup("b", 3, phase="Inqueue", created="2026-01-01T00:00:02Z")
    pods = gang_pods("a", 3, cpu="2", created="2026-01-01T00:00:01Z") + gang_pods(
        "b", 3, cpu="2", created="2026-01-01T00:00:02Z"
    )
    result = session([node("las1", cpu="8")], pods, [first, second])

    bound_groups = {b.name.split("-")[0] for b in result.binds}
    assert bound_groups == {"a"}
    assert len(result.binds) == 3
    phases = {w.name: w.status["phase"] for w in result.podgroup_writes}
    assert phases == {"a": "Running", "b": "Inqueue"}


def test_a_pod_that_fits_no_node_gets_failed_scheduling() -> None:
    result = session(
        [node("las1", cpu="2")], gang_pods("big", 1, cpu="16"), [podgroup("big", 1, phase="Inqueue")]
    )

    assert result.binds == ()
    (condition,) = result.pod_conditions
    assert condition.condition["type"] == "PodScheduled"
    assert condition.condition["status"] == "False"
    assert condition.condition["message"] == "0/1 nodes are unavailable: 1 Insufficient cpu."
    failed = [e for e in result.events if e.reason == "FailedScheduling"]
    assert [(e.kind, e.name, e.type) for e in failed] == [("Pod", "big-0", "Warning")]


def test_binpack_prefers_the_fullest_node() -> None:
    busy = pod("other", cpu="6", node_name="las2", phase="Running", scheduler="default-scheduler")
    result = session(
        [node("las1"), node("las2")], [busy, *gang_pods("g", 2)], [podgroup("g", 2, phase="Inqueue")]
    )

    assert {b.node for b in result.binds} == {"las2"}


def test_enqueue_rejects_min_resources_beyond_the_overcommitted_cluster() -> None:
    group = podgroup("huge", 1, min_resources={"cpu": "10"})  # 8 cpu x 1.2 = 9.6 < 10
    result = session([node("las1")], [], [group])

    assert [w.status["phase"] for w in result.podgroup_writes] == ["Pending"]
    assert ("Normal", "Unschedulable", "resource in cluster is overused: overused cpu") in [
        (e.type, e.reason, e.message) for e in result.events
    ]


def test_enqueue_respects_the_queue_capability() -> None:
    group = podgroup("g", 1, min_resources={"cpu": "3"})
    result = session([node("las1")], [], [group], [queue(capability={"cpu": "2"})])

    assert [w.status["phase"] for w in result.podgroup_writes] == ["Pending"]
    assert any(e.message == "queue resource quota insufficient: insufficient cpu" for e in result.events)


def test_admitted_gangs_reserve_their_min_resources_against_later_ones() -> None:
    first = podgroup("a", 1, min_resources={"cpu": "6"}, phase="Inqueue")
    second = podgroup("b", 1, min_resources={"cpu": "6"})
    result = session([node("las1")], [], [first, second])

    assert {w.name: w.status["phase"] for w in result.podgroup_writes} == {"b": "Pending"}


def test_a_podgroup_in_an_unknown_queue_is_ignored() -> None:
    result = session([node("las1")], gang_pods("g", 1), [podgroup("g", 1, queue="nowhere")])

    assert result == type(result)()


def test_running_counters_and_completion() -> None:
    group = podgroup("g", 2, phase="Running")
    running = [
        pod("g-0", group="g", node_name="las1", phase="Running"),
        pod("g-1", group="g", node_name="las1", phase="Succeeded"),
    ]
    (write,) = session([node("las1")], running, [group]).podgroup_writes
    assert (write.status["phase"], write.status.get("running"), write.status.get("succeeded")) == (
        "Running",
        1,
        1,
    )

    done = [
        pod("g-0", group="g", node_name="las1", phase="Failed"),
        pod("g-1", group="g", node_name="las1", phase="Succeeded"),
    ]
    (write,) = session([node("las1")], done, [group]).podgroup_writes
    assert write.status["phase"] == "Completed"


def test_a_running_gang_that_loses_a_pod_it_cannot_replace_is_unknown() -> None:
    group = podgroup("g", 2, phase="Running")
    pods = [pod("g-0", group="g", node_name="las1", phase="Running", cpu="7"), pod("g-1", group="g", cpu="7")]
    (write,) = session([node("las1")], pods, [group]).podgroup_writes

    assert write.status["phase"] == "Unknown"


def test_an_unchanged_status_is_not_written_again() -> None:
    condition = {
        "type": "Scheduled",
        "status": "True",
        "transitionID": "old",
        "lastTransitionTime": "t0",
        "reason": "tasks in gang are ready to be scheduled",
        "message": "",
    }
    group = podgroup("g", 1, phase="Running", conditions=[condition])
    group["status"]["running"] = 1
    result = session([node("las1")], [pod("g-0", group="g", node_name="las1", phase="Running")], [group])

    assert result.podgroup_writes == ()
    assert result.events == ()


def test_plain_pods_go_to_the_least_allocated_node_and_unfit_ones_fail() -> None:
    busy = pod("busy", cpu="6", node_name="las1", phase="Running", scheduler="default-scheduler")
    small = pod("small", scheduler="default-scheduler")
    huge = pod("huge", scheduler="default-scheduler", cpu="100")
    result = session([node("las1"), node("las2")], [busy, small, huge], [])

    assert [(b.name, b.node) for b in result.binds] == [("small", "las2")]
    (condition,) = result.pod_conditions
    assert condition.name == "huge"
    assert condition.condition["message"] == "0/2 nodes are available: 2 Insufficient cpu."


def test_pods_of_other_schedulers_are_left_alone() -> None:
    result = session([node("las1")], [pod("x", scheduler="someone-else")], [])
    assert result.binds == ()


def test_a_gang_refused_at_enqueue_binds_nothing_even_if_its_pods_would_fit() -> None:
    group = podgroup("g", 2, min_resources={"cpu": "20"})
    result = session([node("las1")], gang_pods("g", 2), [group])

    assert result.binds == ()
    (write,) = result.podgroup_writes
    assert write.status["phase"] == "Pending"
    # Volcano's gang plugin words the condition as for any gang that is not ready; the refusal
    # itself is a Normal event, and not part of the condition's message.
    assert write.status["conditions"][0]["message"] == (
        "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
        "Pending: 2 Unschedulable"
    )
    assert ("Normal", "Unschedulable", "resource in cluster is overused: overused cpu") in {
        (e.type, e.reason, e.message) for e in result.events if e.kind == "PodGroup"
    }


def test_higher_priority_gangs_are_served_first() -> None:
    low = podgroup("low", 1, phase="Inqueue", created="2026-01-01T00:00:01Z")
    high = podgroup("high", 1, phase="Inqueue", created="2026-01-01T00:00:02Z")
    urgent = pod("high-0", group="high", cpu="6", created="2026-01-01T00:00:02Z")
    urgent["spec"]["priority"] = 1000
    result = session([node("las1")], [pod("low-0", group="low", cpu="6"), urgent], [low, high])

    assert [b.name for b in result.binds] == ["high-0"]


# --- minTaskMember (per-role gangs) --------------------------------------------------------------


def _ps_and_workers(ps_cpu: str) -> list[dict[str, Any]]:
    return [
        pod("tj-ps-0", group="tj", role="ps", cpu=ps_cpu),
        *(pod(f"tj-worker-{i}", group="tj", role="worker", cpu="1") for i in range(3)),
    ]


def test_without_min_task_member_a_gang_below_its_total_starts_without_its_ps() -> None:
    # What Volcano does for training-operator's PodGroups: minMember 2 is met by two workers.
    group = podgroup("tj", 2, phase="Inqueue")
    result = session([node("a", cpu="2"), node("b", cpu="2")], _ps_and_workers("3"), [group])

    assert sorted(b.name for b in result.binds) == ["tj-worker-0", "tj-worker-1", "tj-worker-2"]


def test_min_task_member_holds_the_gang_until_its_ps_fits_and_says_not_enough_resources() -> None:
    # Volcano tries tj-ps-0 first (index 0, then the lower uid); it fits nowhere, and as the ps
    # has fewer placed than its minTaskMember, Volcano tries no further task.
    group = podgroup("tj", 2, phase="Inqueue", min_task_member={"ps": 1, "worker": 1})
    result = session([node("a", cpu="2"), node("b", cpu="2")], _ps_and_workers("3"), [group])

    assert result.binds == ()
    (write,) = result.podgroup_writes
    (condition,) = write.status["conditions"]
    assert condition["type"] == "Unschedulable"
    assert condition["reason"] == "NotEnoughResources"
    fit = (
        "pod group is not ready, 2 minAvailable, 4 Pending; Pending: 4 Unschedulable. "
        "Origin reason is tj-ps-0: 0/2 nodes are unavailable: 2 Insufficient cpu."
    )
    assert condition["message"] == f"2/4 tasks in gang unschedulable: {fit}"
    scheduled = {c.name: (c.condition["reason"], c.condition["message"]) for c in result.pod_conditions}
    assert scheduled == {
        "tj-ps-0": ("Unschedulable", "0/2 nodes are unavailable: 2 Insufficient cpu."),
        **{f"tj-worker-{i}": ("Unschedulable", fit) for i in range(3)},
    }


def test_workers_placed_before_the_ps_fails_count_as_schedulable() -> None:
    # tj-worker-0 is older than tj-ps-0, so Volcano places it first, then stops at the ps.
    group = podgroup("tj", 2, phase="Inqueue", min_task_member={"ps": 1, "worker": 1})
    pods = _ps_and_workers("3")
    pods[0]["metadata"]["creationTimestamp"] = "2026-01-01T00:00:01Z"
    result = session([node("a", cpu="2"), node("b", cpu="2")], pods, [group])

    assert result.binds == ()
    (condition,) = result.podgroup_writes[0].status["conditions"]
    fit = (
        "pod group is not ready, 2 minAvailable, 4 Pending; Pending: 1 Schedulable, 3 Unschedulable. "
        "Origin reason is tj-ps-0: 0/2 nodes are unavailable: 2 Insufficient cpu."
    )
    assert (condition["reason"], condition["message"]) == (
        "NotEnoughResources",
        f"1/4 tasks in gang unschedulable: {fit}",
    )
    scheduled = {c.name: c.condition["reason"] for c in result.pod_conditions}
    assert scheduled == {
        "tj-worker-0": "Schedulable",
        "tj-ps-0": "Unschedulable",
        "tj-worker-1": "Unschedulable",
        "tj-worker-2": "Unschedulable",
    }


def test_a_role_that_fails_skips_its_other_pods_when_the_gang_may_still_start() -> None:
    # minMember 2 with no per-role minimums: after tj-worker-0 fits nowhere the ps and the chief
    # could still make the gang, so Volcano goes on, skipping the other worker as its predicate
    # cache by role does; the gang starts without its workers.
    group = podgroup("tj", 2, phase="Inqueue")
    pods = [
        pod("tj-worker-0", group="tj", role="worker", cpu="3"),
        pod("tj-worker-1", group="tj", role="worker", cpu="3"),
        pod("tj-ps-2", group="tj", role="ps", cpu="1"),
        pod("tj-chief-3", group="tj", role="chief", cpu="1"),
    ]
    result = session([node("a", cpu="2")], pods, [group])

    assert sorted(b.name for b in result.binds) == ["tj-chief-3", "tj-ps-2"]
    scheduled = {c.name: (c.condition["reason"], c.condition["message"]) for c in result.pod_conditions}
    assert scheduled == {
        "tj-worker-0": ("Unschedulable", "0/1 nodes are unavailable: 1 Insufficient cpu."),
        "tj-worker-1": (
            "Unschedulable",
            "Task tj-worker-1 with role spec worker has already predicated failed, skip",
        ),
    }


def test_min_task_member_binds_once_the_ps_fits() -> None:
    group = podgroup("tj", 2, phase="Inqueue", min_task_member={"ps": 1, "worker": 1})
    result = session([node("a", cpu="4"), node("b", cpu="2")], _ps_and_workers("3"), [group])

    assert "tj-ps-0" in {b.name for b in result.binds}
    assert result.podgroup_writes[0].status["phase"] == "Running"


def test_a_role_with_fewer_pods_than_its_minimum_is_not_tried_and_says_not_enough_resources() -> None:
    # Volcano's gang JobValid fails (NotEnoughPodsOfTask, which it only logs): allocate skips the
    # job, and the session's close words it as any gang that is not ready.
    group = podgroup("tj", 2, phase="Inqueue", min_task_member={"ps": 1, "worker": 1})
    workers = [pod(f"tj-worker-{i}", group="tj", role="worker") for i in range(2)]
    result = session([node("a")], workers, [group])

    assert result.binds == ()
    (condition,) = result.podgroup_writes[0].status["conditions"]
    assert (condition["reason"], condition["message"]) == (
        "NotEnoughResources",
        "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
        "Pending: 2 Unschedulable",
    )


def test_min_task_member_beyond_min_member_is_ignored_as_volcano_does() -> None:
    group = podgroup("tj", 1, phase="Inqueue", min_task_member={"ps": 1, "worker": 1})
    workers = [pod("tj-worker-0", group="tj", role="worker")]
    result = session([node("a")], workers, [group])

    assert [b.name for b in result.binds] == ["tj-worker-0"]


# --- gangpreempt --------------------------------------------------------------------------------


def _running_gang(group: str, count: int, cpu: str, priority: int = 0) -> list[dict[str, Any]]:
    return [
        pod(f"{group}-{i}", group=group, cpu=cpu, node_name="a", phase="Running", priority=priority)
        for i in range(count)
    ]


def test_a_higher_priority_gang_evicts_a_whole_lower_priority_gang_as_volcano_s_evictor_does() -> None:
    low = podgroup("low", 2, phase="Running", queue="default")
    high = podgroup("high", 1, phase="Inqueue", queue="default")
    pods = [*_running_gang("low", 2, "3"), pod("high-0", group="high", cpu="4", priority=1000)]
    result = session([node("a", cpu="8")], pods, [low, high])

    assert result.binds == ()  # the preemptor waits for its victims to be gone
    assert sorted((e.name, e.reason, e.message) for e in result.evictions) == [
        ("low-0", "PreemptionByScheduler", "volcano: preempting to accommodate a higher priority pod"),
        ("low-1", "PreemptionByScheduler", "volcano: preempting to accommodate a higher priority pod"),
    ]


def test_a_higher_priority_gang_of_another_queue_preempts_nothing() -> None:
    """Volcano's preempt stays inside a queue; across queues it is reclaim, which the sandbox
    does not do (it goes by deserved shares, not priorities)."""
    low = podgroup("low", 2, phase="Running", queue="default")
    high = podgroup("high", 1, phase="Inqueue", queue="urgent")
    pods = [*_running_gang("low", 2, "3"), pod("high-0", group="high", cpu="4", priority=1000)]
    result = session([node("a", cpu="8")], pods, [low, high], [queue(), queue("urgent")])

    assert result.evictions == ()
    assert result.binds == ()


def test_a_preemption_in_flight_is_not_repeated() -> None:
    low = podgroup("low", 2, phase="Running")
    other = podgroup("other", 1, phase="Running", created="2026-01-01T00:00:05Z")
    releasing = _running_gang("low", 2, "3")
    for found in releasing:
        found["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:09Z"
    pods = [
        *releasing,
        pod("other-0", group="other", cpu="1", node_name="a", phase="Running"),
        pod("high-0", group="high", cpu="4", priority=1000),
    ]
    result = session([node("a", cpu="8")], pods, [low, other, podgroup("high", 1, phase="Inqueue")])

    assert result.evictions == ()


def test_no_gang_of_equal_or_higher_priority_is_preempted() -> None:
    low = podgroup("peer", 2, phase="Running")
    high = pod("high-0", group="high", cpu="4", priority=1000)
    pods = [*_running_gang("peer", 2, "3", priority=1000), high]
    result = session([node("a", cpu="8")], pods, [low, podgroup("high", 1, phase="Inqueue")])

    assert result.evictions == ()


def test_the_fewest_lowest_priority_newest_gangs_are_chosen() -> None:
    older_at, newer_at = "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"
    older = podgroup("older", 1, phase="Running", created=older_at)
    newer = podgroup("newer", 1, phase="Running", created=newer_at)
    pods = [
        pod("older-0", group="older", cpu="3", node_name="a", phase="Running", created=older_at),
        pod("newer-0", group="newer", cpu="3", node_name="a", phase="Running", created=newer_at),
        pod("high-0", group="high", cpu="4", priority=1000),
    ]
    result = session([node("a", cpu="8")], pods, [older, newer, podgroup("high", 1, phase="Inqueue")])

    assert [e.name for e in result.evictions] == ["newer-0"]


# --- network topology (HyperNodes) -----------------------------------------------------------------

SWITCHES = [
    hypernode("s1", 1, nodes=("a",)),
    hypernode("s2", 1, nodes=("b", "c")),
    hypernode("spine", 2, children=("s1", "s2")),
]
NODES_ABC = [node("a", cpu="4"), node("b", cpu="2"), node("c", cpu="2")]


def _topology_gang(mode: str, tier: int, count: int = 2, cpu: str = "2") -> tuple[list, list]:  # type: ignore[type-arg]
    group = podgroup(
        "tj", count, phase="Inqueue", network_topology={"mode": mode, "highestTierAllowed": tier}
    )
    return [group], gang_pods("tj", count, cpu=cpu)


def test_hypernode_members_resolve_through_lower_tiers() -> None:
    snapshot = build_snapshot(NODES_ABC, [], [], [queue()], SWITCHES)
    assert [(h.name, h.tier, sorted(h.nodes)) for h in snapshot.hypernodes] == [
        ("s1", 1, ["a"]),
        ("s2", 1, ["b", "c"]),
        ("spine", 2, ["a", "b", "c"]),
    ]


def test_a_hard_gang_is_placed_inside_one_hypernode_of_the_allowed_tier() -> None:
    groups, pods = _topology_gang("hard", 1, count=3, cpu="1")
    result = session(NODES_ABC, pods, groups, hypernodes=SWITCHES)
    nodes = {b.node for b in result.binds}
    assert len(result.binds) == 3 and (nodes <= {"a"} or nodes <= {"b", "c"})


def test_a_hard_gang_that_fits_no_hypernode_of_its_tier_waits_and_says_why() -> None:
    groups, pods = _topology_gang("hard", 1, count=3, cpu="2")  # 6 cpu: s1 has 4, s2 has 4
    result = session(NODES_ABC, pods, groups, hypernodes=SWITCHES)
    assert result.binds == ()
    (condition,) = result.podgroup_writes[0].status["conditions"]
    assert condition["reason"] == "NotEnoughResources"
    assert condition["message"].endswith(
        "Origin reason is tj-2: In hyperNode s1: 0/1 nodes are unavailable: 1 Insufficient cpu."
    )


def test_a_higher_tier_lets_the_same_gang_span_switches() -> None:
    groups, pods = _topology_gang("hard", 2, count=3, cpu="2")
    result = session(NODES_ABC, pods, groups, hypernodes=SWITCHES)
    assert len(result.binds) == 3


def test_a_hard_gang_without_any_hypernode_waits() -> None:
    groups, pods = _topology_gang("hard", 1)
    result = session(NODES_ABC, pods, groups)
    assert result.binds == ()
    (condition,) = result.podgroup_writes[0].status["conditions"]
    assert condition["message"] == (
        "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
        "Pending: 2 Unschedulable"
    )


def test_a_soft_gang_falls_back_to_any_nodes() -> None:
    groups, pods = _topology_gang("soft", 1, count=3, cpu="2")
    result = session(NODES_ABC, pods, groups, hypernodes=SWITCHES)
    assert len(result.binds) == 3
