"""Upstream's behaviour: the pods and services a pass creates and deletes."""

from __future__ import annotations

from tfjob.planner import CreatePod, CreateService, DeletePod, DeleteService

from .builders import (
    NO_GANG,
    action_names,
    condition_types,
    make_job,
    pod,
    replica,
    run,
    running_status,
    services,
)
from .cluster import Cluster


def test_s11_local_job_gets_one_pod_one_headless_service_and_created() -> None:
    job = make_job({"Worker": replica(1)})
    result = run(job)
    assert action_names(result) == ["CreatePod:tj-worker-0", "CreateService:tj-worker-0"]
    created_pod = result.actions[0]
    assert isinstance(created_pod, CreatePod)
    labels = created_pod.pod["metadata"]["labels"]
    assert labels == {
        "training.kubeflow.org/operator-name": "tfjob-controller",
        "training.kubeflow.org/job-name": "tj",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/job-role": "master",
    }
    assert created_pod.pod["spec"]["restartPolicy"] == "Never"
    env = created_pod.pod["spec"]["containers"][0].get("env") or []
    assert all(entry["name"] != "TF_CONFIG" for entry in env)
    owner = created_pod.pod["metadata"]["ownerReferences"][0]
    assert owner["controller"] is True and owner["blockOwnerDeletion"] is True and owner["uid"] == "uid-tj"
    service = result.actions[1]
    assert isinstance(service, CreateService)
    assert service.service["spec"]["clusterIP"] == "None"
    assert service.service["spec"]["ports"] == [{"name": "tfjob-port", "port": 2222}]
    assert len(service.service["spec"]["selector"]) == 4
    assert condition_types(result) == ["Created"]
    assert result.status["conditions"][0]["message"] == "TFJob tj is created."
    assert result.status["startTime"] == "2026-11-29T10:41:00Z"
    assert result.status["replicaStatuses"] == {"Worker": {}}
    assert result.counters == ("jobs_created",)


def test_s14_single_ps_job_never_runs_or_succeeds() -> None:
    job = make_job({"PS": replica(1)}, status=running_status(["Created"]))
    assert condition_types(run(job, [pod(job, "PS", 0, "Running")], svcs=services(job))) == ["Created"]
    done = run(job, [pod(job, "PS", 0, "Succeeded", exit_code=0)], svcs=services(job))
    assert condition_types(done) == ["Created"]
    assert done.actions == ()


def test_s17_template_restart_policy_is_overridden_with_a_warning() -> None:
    job = make_job({"Worker": replica(1, "ExitCode", template_spec={"restartPolicy": "Always"})})
    result = run(job)
    created = next(action for action in result.actions if isinstance(action, CreatePod))
    assert created.pod["spec"]["restartPolicy"] == "Never"
    warning = next(event for event in result.events if event.reason == "SetPodTemplateRestartPolicy")
    assert warning.type == "Warning"
    assert (
        warning.message
        == "Restart policy in pod template will be overwritten by restart policy in replica spec"
    )


def test_s19_scale_up_creates_only_the_new_indices() -> None:
    before = make_job({"Worker": replica(2)}, status=running_status(["Created", "Running"]))
    pods = [pod(before, "Worker", 0, "Running"), pod(before, "Worker", 1, "Running")]
    after = make_job({"Worker": replica(4)}, status=running_status(["Created", "Running"]))
    result = run(after, pods, svcs=services(before))
    assert action_names(result) == [
        "CreatePod:tj-worker-2",
        "CreatePod:tj-worker-3",
        "CreateService:tj-worker-2",
        "CreateService:tj-worker-3",
    ]


def test_s20_scale_down_deletes_the_index_and_does_not_fail_the_job_d4() -> None:
    job = make_job({"Worker": replica(3, "Never")})
    cluster = Cluster(job, NO_GANG, graceful_delete=True)
    cluster.reconcile()
    for name in ("tj-worker-0", "tj-worker-1", "tj-worker-2"):
        cluster.set_pod(name, "Running")
    cluster.reconcile()
    cluster.set_replicas("Worker", 2)
    shrink = cluster.reconcile()
    assert action_names(shrink) == ["DeletePod:tj-worker-2", "DeleteService:tj-worker-2"]
    assert cluster.pods["tj-worker-2"]["metadata"].get("deletionTimestamp")  # still terminating, Running
    after = cluster.reconcile()
    assert after.actions == ()
    assert cluster.conditions == [("Created", "True"), ("Running", "True")]
    assert cluster.job is not None
    assert cluster.job["status"]["replicaStatuses"]["Worker"] == {"active": 2}
    cluster.finish_deletions()
    assert cluster.reconcile().actions == ()  # no recreation of an out-of-range index


def test_s20_scale_down_with_dynamic_workers_keeps_running() -> None:
    job = make_job(
        {"Worker": replica(2)}, status=running_status(["Created", "Running"]), enableDynamicWorker=True
    )
    pods = [pod(job, "Worker", i, "Running") for i in range(2)]
    pods.append(pod(job, "Worker", 2, "Running", terminating=True))
    result = run(job, pods, svcs=services(job))
    assert condition_types(result)[-1] == "Running"
    assert result.actions == ()


def test_s21_duplicate_pods_at_one_index_are_neither_counted_nor_replaced() -> None:
    job = make_job({"Worker": replica(2)}, status=running_status(["Created"]))
    twins = [pod(job, "Worker", 0, "Running", uid="a"), pod(job, "Worker", 0, "Running", uid="b")]
    result = run(job, [*twins, pod(job, "Worker", 1, "Pending")], svcs=services(job))
    assert not any(isinstance(action, CreatePod | DeletePod) for action in result.actions)
    assert result.status["replicaStatuses"]["Worker"] == {}
    assert condition_types(result) == ["Created"]
    assert not any(isinstance(action, DeleteService) for action in result.actions)


def test_a_pod_deleted_by_someone_else_is_replaced_once_gone_without_failing_d4() -> None:
    # Per-replica replacement (a job without PS restarts as a gang unless told otherwise: D18).
    job = make_job({"Worker": replica(2, "Never")}, annotations={"tfgang.io/gang-restart": "false"})
    cluster = Cluster(job, NO_GANG)
    cluster.reconcile()
    cluster.set_pod("tj-worker-0", "Running")
    cluster.set_pod("tj-worker-1", "Running")
    cluster.reconcile()
    # kubectl delete pod: the pod terminates first
    cluster.pods["tj-worker-1"]["metadata"]["deletionTimestamp"] = "2026-11-29T10:41:00Z"
    assert cluster.reconcile().actions == ()  # still there: no second pod for index 1
    assert cluster.conditions[-1] == ("Running", "True")
    cluster.finish_deletions()
    assert action_names(cluster.reconcile()) == ["CreatePod:tj-worker-1"]
    assert cluster.conditions[-1] == ("Running", "True")
