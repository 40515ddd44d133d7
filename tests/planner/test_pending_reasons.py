"""Why a job is not running yet: Volcano's reasons in the Created condition and one event each."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubeobjects.times import format_time
from tfjob.planner import Observed, Plan, plan
from tfjob.planner.waiting import MAX_MESSAGE, refused_creation_status
from tfjob.settings import Settings
from tfjob.wire import PodGroup, TFJob

from .builders import VOLCANO, at, condition, make_job, pod, podgroup, reasons, replica, with_status

TAINT = (
    "4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; "
    "Pending: 4 Unschedulable. Origin reason is tj-worker-0: 0/1 nodes are unavailable: "
    "1 node(s) had untolerated taint {gpu: true}."
)
QUOTA = "queue resource quota insufficient: insufficient cpu"
QUIET = "0/0 tasks in gang unschedulable: pod group is not ready, 4 minAvailable"


def _job() -> TFJob:
    return make_job({"Worker": replica(4, cpu="1")})


def _unschedulable(group: PodGroup, message: str, since: datetime) -> PodGroup:
    group.setdefault("status", {})["conditions"] = [  # type: ignore[typeddict-item]
        {
            "type": "Unschedulable",
            "status": "True",
            "transitionID": "s1",
            "lastTransitionTime": format_time(since),
            "reason": "NotEnoughResources",
            "message": message,
        }
    ]
    return group


def _scheduled_after(group: PodGroup, when: datetime) -> PodGroup:
    group["status"]["conditions"].append(  # type: ignore[typeddict-item]
        {
            "type": "Scheduled",
            "status": "True",
            "transitionID": "s2",
            "lastTransitionTime": format_time(when),
            "reason": "tasks in gang are ready to be scheduled",
            "message": "",
        }
    )
    return group


def _event(group: PodGroup, message: str, first: datetime, last: datetime, uid: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": "tj.1", "namespace": "ns"},
        "involvedObject": {"kind": "PodGroup", "name": "tj", "uid": uid or group["metadata"]["uid"]},
        "type": "Normal",
        "reason": "Unschedulable",
        "message": message,
        "firstTimestamp": format_time(first),
        "lastTimestamp": format_time(last),
    }


def _plan(
    job: TFJob,
    group: PodGroup | None,
    now: datetime,
    *,
    pods: list[Any] | None = None,
    events: list[dict[str, Any]] | None = None,
    settings: Settings = VOLCANO,
) -> Plan:
    return plan(Observed(job, pods or [], [], group, {}, events or []), now, settings)


def _created_message(result: Plan) -> str:
    return str(condition(result, "Created").get("message"))


def _started_job_with_pods(group: PodGroup) -> tuple[TFJob, list[Any]]:
    job = _job()
    first = _plan(job, group, at(0))
    job = with_status(job, first)
    return job, [pod(job, "Worker", i) for i in range(4)]


def _with_uid(group: PodGroup) -> PodGroup:
    group["metadata"]["uid"] = "pg-uid-1"
    return group


def test_an_unschedulable_gang_is_reported_once_it_has_held_for_the_grace() -> None:
    group = _unschedulable(podgroup(_job(), "Inqueue"), TAINT, at(1))
    job, pods = _started_job_with_pods(group)

    young = _plan(job, group, at(5), pods=pods)
    assert _created_message(young) == "TFJob tj is created."
    assert young.requeue_after == 6.0  # the grace ends 10 s after Volcano first said it

    held = _plan(job, group, at(11), pods=pods)
    message = _created_message(held)
    assert message.startswith(
        "TFJob tj is created. Not running yet: PodGroup tj is Inqueue (NotEnoughResources): "
    )
    assert message.endswith(TAINT)
    assert condition(held, "Created")["reason"] == "TFJobCreated"
    assert condition(held, "Created")["status"] == "True"
    assert condition(held, "Created")["lastUpdateTime"] == format_time(at(11))
    assert [(e.type, e.reason) for e in held.events] == [("Warning", "PodGroupPending")]
    assert TAINT in held.events[0].message

    # The same reason on the next pass: nothing changes, no second event (deduplicated).
    again = _plan(with_status(job, held), group, at(20), pods=pods)
    assert again.status == held.status
    assert "PodGroupPending" not in reasons(again)


def test_the_reason_clears_when_the_gang_is_admitted_and_scheduled() -> None:
    group = _unschedulable(podgroup(_job(), "Inqueue"), TAINT, at(1))
    job, pods = _started_job_with_pods(group)
    held = _plan(job, group, at(11), pods=pods)
    job = with_status(job, held)

    _scheduled_after(group, at(30))
    cleared = _plan(job, group, at(31), pods=pods)
    assert _created_message(cleared) == "TFJob tj is created."
    assert (
        condition(cleared, "Created")["lastTransitionTime"]
        == condition(held, "Created")["lastTransitionTime"]
    )
    assert "PodGroupPending" not in reasons(cleared)


def test_a_transient_unschedulable_condition_costs_nothing() -> None:
    """Between admission and binding Volcano may write Unschedulable for a session: not reported."""
    group = _unschedulable(podgroup(_job(), "Inqueue"), "4/2 tasks in gang unschedulable: ...", at(1))
    job, pods = _started_job_with_pods(group)
    before = _plan(job, group, at(2), pods=pods)
    _scheduled_after(group, at(3))
    after = _plan(with_status(job, before), group, at(12), pods=pods)
    assert _created_message(after) == "TFJob tj is created."
    assert after.status == before.status


def test_a_full_queue_is_reported_from_volcanos_enqueue_event_while_pods_are_held_back() -> None:
    job = _job()
    group = _with_uid(podgroup(job, "Pending"))
    events = [
        _event(group, QUIET, at(0), at(20)),  # says nothing: not reported
        _event(group, QUOTA, at(1), at(19)),
        _event(group, "resource in cluster is overused: overused cpu", at(0), at(5), uid="an-older-podgroup"),
    ]
    first = _plan(job, group, at(0), events=events)
    result = _plan(with_status(job, first), group, at(12), events=events)
    assert result.actions == ()  # still held back
    assert _created_message(result) == (
        "TFJob tj is created. Not running yet: PodGroup tj is Pending (Unschedulable): " + QUOTA
    )
    assert [(e.type, e.reason) for e in result.events] == [("Warning", "PodGroupPending")]


def test_a_queue_that_stops_refusing_clears_once_admitted() -> None:
    job = _job()
    group = _with_uid(podgroup(job, "Pending"))
    events = [_event(group, QUOTA, at(0), at(19))]
    held = _plan(job, group, at(12), events=events)
    job = with_status(job, held)
    assert "insufficient cpu" in _created_message(held)
    group["status"] = {"phase": "Inqueue"}  # type: ignore[typeddict-item]
    admitted = _plan(job, group, at(20), events=events)  # the old event no longer matters
    assert _created_message(admitted) == "TFJob tj is created."
    assert len([a for a in admitted.actions if type(a).__name__ == "CreatePod"]) == 4


def test_unschedulable_pods_are_reported_without_a_gang() -> None:
    job = _job()
    no_gang = Settings(gang_scheduler_name="")
    first = _plan(job, None, at(0), settings=no_gang)
    job = with_status(job, first)
    pods = [pod(job, "Worker", i) for i in range(4)]
    pods[2]["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient cpu.",
            "lastTransitionTime": format_time(at(1)),
        }
    ]
    result = _plan(job, None, at(12), pods=pods, settings=no_gang)
    assert _created_message(result) == (
        "TFJob tj is created. Not running yet: pod tj-worker-2 is unschedulable (Unschedulable): "
        "0/1 nodes are available: 1 Insufficient cpu."
    )
    # upstream's abnormal-pod Warning already says it; no second event
    assert [(e.type, e.reason) for e in result.events] == [("Warning", "Unschedulable")]
    assert result.events[0].message.startswith("Error pod tj-worker-2 condition message:")


def test_a_running_job_reports_nothing() -> None:
    group = _unschedulable(podgroup(_job(), "Inqueue"), TAINT, at(1))
    job, _ = _started_job_with_pods(group)
    running_pods = [pod(job, "Worker", i, "Running") for i in range(4)]
    result = _plan(job, group, at(30), pods=running_pods)
    assert condition(result, "Running")["status"] == "True"
    assert _created_message(result) == "TFJob tj is created."


def test_a_refused_pod_creation_reaches_the_created_condition() -> None:
    job = _job()
    api_message = (
        'pods "tj-worker-0" is forbidden: exceeded quota: q, requested: cpu=1, used: cpu=2, limited: cpu=2'
    )
    status = refused_creation_status(job.get("status"), "tj", "pod tj-worker-0", api_message, at(3))
    assert status["conditions"][0]["type"] == "Created"
    assert status["conditions"][0]["reason"] == "TFJobCreated"
    assert (
        status["conditions"][0]["message"]
        == f"TFJob tj is created. pod tj-worker-0 cannot be created: {api_message}"
    )
    # the next pass whose creates go through puts the plain message back
    after = _plan(
        with_status(job, Plan(status, (), (), None, ())),
        None,
        at(9),
        settings=Settings(gang_scheduler_name=""),
    )
    assert _created_message(after) == "TFJob tj is created."


def test_a_finished_job_keeps_its_status_when_a_create_is_refused() -> None:
    job = make_job(
        {"Worker": replica(1)},
        status={
            "conditions": [
                {
                    "type": "Created",
                    "status": "True",
                    "reason": "TFJobCreated",
                    "message": "TFJob tj is created.",
                },
                {"type": "Failed", "status": "True", "reason": "TFJobFailed", "message": "x"},
            ]
        },
    )
    assert refused_creation_status(job["status"], "tj", "pod tj-worker-0", "no", at(1)) == job["status"]


def test_messages_are_bounded() -> None:
    group = _unschedulable(podgroup(_job(), "Inqueue"), "x" * 100_000, at(1))
    job, pods = _started_job_with_pods(group)
    result = _plan(job, group, at(11), pods=pods)
    assert len(_created_message(result)) <= MAX_MESSAGE
    assert all(len(event.message) <= MAX_MESSAGE for event in result.events)


def test_a_gang_waiting_for_its_ps_shows_volcano_s_words_with_the_ps_as_origin() -> None:
    """minTaskMember: a gang whose workers fit but whose PS does not waits, and says so in the
    words Volcano v1.14 writes (NotEnoughResources, the PS's fit error as the origin)."""
    job = make_job(
        {"PS": replica(1, cpu="3"), "Worker": replica(3, cpu="1")},
        run_policy={"schedulingPolicy": {"minAvailable": 2}},
    )
    group = podgroup(job, "Inqueue")
    assert group["spec"]["minTaskMember"] == {"ps": 1, "worker": 1}
    why = (
        "1/4 tasks in gang unschedulable: pod group is not ready, 2 minAvailable, 4 Pending; "
        "Pending: 1 Schedulable, 3 Unschedulable. Origin reason is tj-ps-0: 0/2 nodes are "
        "unavailable: 2 Insufficient cpu."
    )
    _unschedulable(group, why, at(1))
    first = _plan(job, group, at(0))
    job = with_status(job, first)
    pods = [pod(job, "PS", 0), *(pod(job, "Worker", i) for i in range(3))]

    held = _plan(job, group, at(11), pods=pods)
    message = _created_message(held)
    assert message == (
        f"TFJob tj is created. Not running yet: PodGroup tj is Inqueue (NotEnoughResources): {why}"
    )
    assert [(e.type, e.reason) for e in held.events] == [("Warning", "PodGroupPending")]
