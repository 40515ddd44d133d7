"""Upstream's behaviour and D14/D15: the PodGroup and the gang hold-back."""

from __future__ import annotations

from tfjob.planner import CreatePod, CreatePodGroup, CreateService, DeletePodGroup, PatchPodGroup
from tfjob.wire import TFJob

from .builders import (
    SCHEDULER_PLUGINS,
    VOLCANO,
    at,
    conditions_of,
    make_job,
    pod,
    podgroup,
    replica,
    run,
    running_status,
    services,
    with_status,
)
from .cluster import Cluster


def _s49_job() -> TFJob:
    return make_job(
        {"PS": replica(1, cpu="1"), "Worker": replica(2, cpu="2", memory="4Gi")},
        annotations={"team": "ml"},
    )


def test_s49_podgroup_first_pods_held_back_until_inqueue() -> None:
    cluster = Cluster(_s49_job(), VOLCANO)
    first = cluster.reconcile(at(0))
    assert [type(a) for a in first.actions] == [CreatePodGroup]
    group = first.actions[0].podgroup  # type: ignore[union-attr]
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group["metadata"]["name"] == "tj" and group["metadata"]["namespace"] == "ns"
    assert group["metadata"]["annotations"] == {"team": "ml"}
    assert group["metadata"]["ownerReferences"][0]["controller"] is True
    assert group["spec"] == {
        "minMember": 3,
        "queue": "default",
        "priorityClassName": "",
        "minResources": {"cpu": "5", "memory": "8Gi"},
        "minTaskMember": {"ps": 1, "worker": 2},
    }
    assert cluster.job is not None
    assert cluster.job["status"]["lastReconcileTime"] == "2026-11-29T10:41:00Z"
    assert cluster.conditions == [("Created", "True")]
    for phase in ("", "Pending"):
        cluster.set_podgroup_phase(phase)
        waiting = cluster.reconcile(at(5))
        assert waiting.actions == ()
        assert cluster.job["status"]["lastReconcileTime"] == "2026-11-29T10:41:00Z"  # written once
    assert "startTime" not in cluster.job["status"]
    cluster.set_podgroup_phase("Inqueue")
    admitted = cluster.reconcile(at(6))
    assert len([a for a in admitted.actions if isinstance(a, CreatePod)]) == 3
    assert len([a for a in admitted.actions if isinstance(a, CreateService)]) == 3
    assert cluster.job["status"]["startTime"] == "2026-11-29T10:41:06Z"


def test_s50_min_available_counts_the_highest_priority_pods_d11() -> None:
    job = make_job(
        {
            "PS": replica(1, cpu="1"),
            "Worker": replica(2, cpu="2", template_spec={"priorityClassName": "high"}),
        },
        run_policy={"schedulingPolicy": {"minAvailable": 1}},
    )
    result = run(job, settings=VOLCANO, priority_values={"high": 1000})
    group = result.actions[0]
    assert isinstance(group, CreatePodGroup)
    assert group.podgroup["spec"]["minMember"] == 1
    assert group.podgroup["spec"]["minResources"] == {"cpu": "2"}


def test_s51_explicit_scheduling_policy_and_an_existing_queue_is_kept() -> None:
    policy = {"queue": "q1", "priorityClass": "pc", "minResources": {"cpu": "10"}}
    job = make_job({"Worker": replica(2)}, run_policy={"schedulingPolicy": policy})
    created = run(job, settings=VOLCANO).actions[0]
    assert isinstance(created, CreatePodGroup)
    assert created.podgroup["spec"] == {
        "minMember": 2,
        "queue": "q1",
        "priorityClassName": "pc",
        "minResources": {"cpu": "10"},
        "minTaskMember": {"worker": 2},
    }
    existing = podgroup(job, "Inqueue")
    existing["spec"]["queue"] = "q0"
    result = run(job, group=existing, settings=VOLCANO)
    assert not any(isinstance(a, PatchPodGroup) for a in result.actions)


def test_s52_a_template_scheduler_is_kept_with_a_warning() -> None:
    job = make_job(
        {"PS": replica(1), "Worker": replica(1, template_spec={"schedulerName": "default-scheduler"})}
    )
    result = run(job, group=podgroup(job, "Inqueue"), settings=VOLCANO)
    warning = next(e for e in result.events if e.reason == "SetPodTemplateSchedulerName")
    assert warning.type == "Warning"
    assert warning.message == (
        "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten"
    )
    worker = next(a for a in result.actions if isinstance(a, CreatePod) and a.name == "tj-worker-0")
    assert worker.pod["spec"]["schedulerName"] == "default-scheduler"


def test_s53_finishing_deletes_the_podgroup_with_events() -> None:
    job = make_job({"Worker": replica(1)}, status=running_status(["Created", "Running"]))
    done = [pod(job, "Worker", 0, "Succeeded", exit_code=0)]
    result = run(job, done, svcs=services(job), group=podgroup(job, "Running"), settings=VOLCANO)
    deletion = next(a for a in result.actions if isinstance(a, DeletePodGroup))
    assert ("Normal", "JobTerminated", "Job has been terminated. Deleting PodGroup") in [
        (e.type, e.reason, e.message) for e in result.events
    ]
    event = deletion.success_event()
    assert event is not None and (event.reason, event.message) == (
        "SuccessfulDeletePodGroup",
        "Deleted PodGroup: tj",
    )
    later = run(with_status(job, result), done, svcs=services(job), settings=VOLCANO)
    assert later.actions == () and later.events == ()  # the PodGroup is gone: no repeated events


def test_s54_scheduler_plugins_podgroup_never_holds_pods_back() -> None:
    job = make_job({"Worker": replica(2)}, run_policy={"schedulingPolicy": {"scheduleTimeoutSeconds": 30}})
    result = run(job, settings=SCHEDULER_PLUGINS)
    group = result.actions[0]
    assert isinstance(group, CreatePodGroup)
    assert group.podgroup["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group.podgroup["spec"] == {"minMember": 2, "minResources": {}, "scheduleTimeoutSeconds": 30}
    assert len([a for a in result.actions if isinstance(a, CreatePod)]) == 2
    assert "lastReconcileTime" not in result.status


def test_d14_schedule_timeout_fails_a_gang_volcano_never_admits() -> None:
    job = make_job({"Worker": replica(2)}, run_policy={"schedulingPolicy": {"scheduleTimeoutSeconds": 60}})
    cluster = Cluster(job, VOLCANO)
    assert cluster.reconcile(at(0)).requeue_after == 60
    cluster.set_podgroup_phase("Pending")
    assert cluster.reconcile(at(45)).requeue_after == 15
    timed_out = cluster.reconcile(at(60))
    assert [type(a) for a in timed_out.actions] == [DeletePodGroup]
    assert cluster.conditions == [("Created", "True"), ("Failed", "True")]
    assert cluster.job is not None
    failed = cluster.job["status"]["conditions"][-1]
    assert failed["reason"] == "TFJobScheduleTimeout"
    assert "not admitted" in failed["message"] and "60s" in failed["message"]
    assert cluster.podgroup is None and cluster.pods == {}


def test_d14_no_timeout_once_the_gang_was_admitted() -> None:
    job = make_job(
        {"Worker": replica(1)},
        run_policy={"schedulingPolicy": {"scheduleTimeoutSeconds": 60}},
        status=running_status(["Created", "Running"]),
    )
    running = [pod(job, "Worker", 0, "Running")]
    group = podgroup(job, "Pending")
    result = run(job, running, svcs=services(job), group=group, settings=VOLCANO, now=at(3600))
    assert conditions_of(result)[-1] == ("Running", "True")
    assert result.actions == ()


def test_d15_podgroup_spec_is_patched_only_when_it_changes() -> None:
    job = make_job({"Worker": replica(2, cpu="1")}, status=running_status(["Created"]))
    group = podgroup(job, "Running")
    assert not any(isinstance(a, PatchPodGroup) for a in run(job, group=group, settings=VOLCANO).actions)
    bigger = make_job({"Worker": replica(3, cpu="1")}, status=running_status(["Created"]))
    patches = [a for a in run(bigger, group=group, settings=VOLCANO).actions if isinstance(a, PatchPodGroup)]
    assert patches == [
        PatchPodGroup(
            "tj", {"spec": {"minMember": 3, "minResources": {"cpu": "3"}, "minTaskMember": {"worker": 3}}}
        )
    ]
