"""The desired pod and headless Service of one replica (upstream v1.9)."""

from __future__ import annotations

import copy

import pytest
from tfjob_test_builders import container, make_job, replica

from tfjob.defaults import with_defaults
from tfjob.facts import read_facts
from tfjob.naming import replica_name
from tfjob.pods import (
    desired_pod,
    gang_annotations,
    pod_restart_policy,
    template_restart_policy_overridden,
)
from tfjob.services import desired_service

OWNER = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "name": "tj",
    "uid": "uid-1",
    "controller": True,
    "blockOwnerDeletion": True,
}
WORKER_0_LABELS = {
    "training.kubeflow.org/operator-name": "tfjob-controller",
    "training.kubeflow.org/job-name": "tj",
    "training.kubeflow.org/replica-type": "worker",
    "training.kubeflow.org/replica-index": "0",
}


def test_s11_local_job_pod_shape() -> None:
    job = with_defaults(make_job({"Worker": replica(1)}))
    pod = desired_pod(read_facts(job), "Worker", 0)
    assert pod["metadata"]["name"] == "tj-worker-0"
    assert pod["metadata"]["namespace"] == "ns"
    assert pod["metadata"]["labels"] == {**WORKER_0_LABELS, "training.kubeflow.org/job-role": "master"}
    assert pod["metadata"]["ownerReferences"] == [OWNER]
    assert pod["spec"]["restartPolicy"] == "Never"
    tensorflow = pod["spec"]["containers"][0]
    assert "env" not in tensorflow, "no TF_CONFIG: the job is local, and the webhook adds it anyway"


def test_s11_local_job_service_shape() -> None:
    job = with_defaults(make_job({"Worker": replica(1)}))
    service = desired_service(read_facts(job), "Worker", 0)
    assert service["metadata"]["name"] == "tj-worker-0"
    assert service["metadata"]["namespace"] == "ns"
    assert service["metadata"]["labels"] == WORKER_0_LABELS, "no job-role label on services"
    assert service["metadata"]["ownerReferences"] == [OWNER]
    assert service["spec"] == {
        "clusterIP": "None",
        "selector": WORKER_0_LABELS,
        "ports": [{"name": "tfjob-port", "port": 2222}],
    }


def test_s02_services_expose_each_types_own_port() -> None:
    job = with_defaults(
        make_job(
            {
                "PS": replica(1),
                "Worker": replica(
                    2,
                    containers=[
                        container(
                            ports=[{"name": "tfjob-port", "containerPort": 3333}, {"containerPort": 6006}]
                        )
                    ],
                ),
            }
        )
    )
    assert desired_service(read_facts(job), "Worker", 1)["spec"]["ports"] == [
        {"name": "tfjob-port", "port": 3333},
        {"port": 6006},
    ]
    assert desired_service(read_facts(job), "PS", 0)["spec"]["ports"] == [
        {"name": "tfjob-port", "port": 2222}
    ]


def test_s12_six_pods_and_services_with_only_worker_0_master() -> None:
    job = with_defaults(make_job({"PS": replica(2), "Worker": replica(4)}))
    indices = [("PS", i) for i in range(2)] + [("Worker", i) for i in range(4)]
    pods = [desired_pod(read_facts(job), rtype, i) for rtype, i in indices]
    services = [desired_service(read_facts(job), rtype, i) for rtype, i in indices]
    names = [replica_name("tj", rtype, i) for rtype, i in indices]
    assert [p["metadata"]["name"] for p in pods] == names
    assert [s["metadata"]["name"] for s in services] == names
    masters = [
        p["metadata"]["name"] for p in pods if "training.kubeflow.org/job-role" in p["metadata"]["labels"]
    ]
    assert masters == ["tj-worker-0"]


def test_s13_only_the_chief_pod_has_job_role_master() -> None:
    job = with_defaults(
        make_job({"Chief": replica(1), "Worker": replica(2), "PS": replica(1), "Evaluator": replica(1)})
    )
    roles = {
        (rtype, i): desired_pod(read_facts(job), rtype, i)["metadata"]["labels"].get(
            "training.kubeflow.org/job-role"
        )
        for rtype, n in [("Chief", 1), ("Worker", 2), ("PS", 1), ("Evaluator", 1)]
        for i in range(n)
    }
    assert {key for key, role in roles.items() if role == "master"} == {("Chief", 0)}
    assert desired_service(read_facts(job), "Evaluator", 0)["metadata"]["name"] == "tj-evaluator-0"


def test_s17_exit_code_replica_policy_overrides_the_template_policy() -> None:
    facts = read_facts(make_job({"Worker": replica(1, restart_policy="ExitCode", restartPolicy="Always")}))
    worker = facts.replica("Worker")
    assert worker is not None
    assert template_restart_policy_overridden(worker), "the planner emits SetPodTemplateRestartPolicy"
    assert desired_pod(facts, "Worker", 0)["spec"]["restartPolicy"] == "Never"


def test_template_without_restart_policy_is_not_overridden() -> None:
    facts = read_facts(make_job({"Worker": replica(1, restart_policy="OnFailure")}))
    worker = facts.replica("Worker")
    assert worker is not None
    assert not template_restart_policy_overridden(worker)
    assert desired_pod(facts, "Worker", 0)["spec"]["restartPolicy"] == "OnFailure"


@pytest.mark.parametrize(
    ("replica_policy", "pod_policy"),
    [
        ("Always", "Always"),
        ("OnFailure", "OnFailure"),
        ("Never", "Never"),
        ("ExitCode", "Never"),
        ("", "Never"),
        ("Weird", "Weird"),
    ],
)
def test_pod_restart_policy_mapping(replica_policy: str, pod_policy: str) -> None:
    assert pod_restart_policy(replica_policy) == pod_policy


def test_template_labels_are_merged_and_the_controllers_win() -> None:
    template_metadata = {
        "labels": {"app": "mnist", "training.kubeflow.org/job-name": "spoofed"},
        "annotations": {"note": "kept"},
        "finalizers": ["example.com/keep"],
        "generateName": "x-",
    }
    spec = replica(1)
    spec["template"]["metadata"] = template_metadata
    raw = make_job({"Worker": spec})
    job = with_defaults(raw)
    before = copy.deepcopy(job)
    pod = desired_pod(read_facts(job), "Worker", 0)
    assert pod["metadata"]["labels"]["app"] == "mnist"
    assert pod["metadata"]["labels"]["training.kubeflow.org/job-name"] == "tj"
    assert pod["metadata"]["annotations"] == {"note": "kept"}
    assert pod["metadata"]["finalizers"] == ["example.com/keep"]
    assert "generateName" not in pod["metadata"]
    assert job == before, "the job is not modified"
    pod["spec"]["containers"][0]["image"] = "changed"
    assert job == before, "the pod is a deep copy of the template"


def test_desired_pod_adds_no_tf_config_no_annotations_and_no_scheduler() -> None:
    """The mutating webhook adds those (design, "Who does what at pod creation")."""
    job = with_defaults(make_job({"PS": replica(1), "Worker": replica(2)}))
    pod = desired_pod(read_facts(job), "Worker", 1)
    assert "annotations" not in pod["metadata"]
    assert "schedulerName" not in pod["spec"]
    assert all(env["name"] != "TF_CONFIG" for c in pod["spec"]["containers"] for env in c.get("env", []))


def test_s18_a_users_tf_config_stays_in_the_pod_untouched() -> None:
    """D13 is the webhook's; the controller's pod carries the user's env exactly as written."""
    user_env = [{"name": "TF_CONFIG", "value": "{}"}]
    job = with_defaults(
        make_job({"PS": replica(1), "Worker": replica(1, containers=[container(env=user_env)])})
    )
    assert desired_pod(read_facts(job), "Worker", 0)["spec"]["containers"][0]["env"] == user_env


def test_desired_pod_of_an_unknown_type_names_it() -> None:
    job = with_defaults(make_job({"Worker": replica(1)}))
    with pytest.raises(ValueError, match="'Chief'"):
        desired_pod(read_facts(job), "Chief", 0)


def test_service_needs_a_tensorflow_container() -> None:
    job = with_defaults(make_job({"Worker": replica(1, containers=[container("main")])}))
    with pytest.raises(ValueError, match="failed to find the port"):
        desired_service(read_facts(job), "Worker", 0)


def test_s49_gang_annotations() -> None:
    assert gang_annotations("tj", "PS") == {
        "scheduling.k8s.io/group-name": "tj",
        "volcano.sh/task-spec": "ps",
    }
    assert gang_annotations("tj", "Worker") == {
        "scheduling.k8s.io/group-name": "tj",
        "volcano.sh/task-spec": "worker",
    }


def test_s52_template_scheduler_name_is_empty_unless_the_template_set_it() -> None:
    facts = read_facts(make_job({"PS": replica(1), "worker": replica(2, schedulerName="default-scheduler")}))
    assert [(r.rtype, r.scheduler_name) for r in facts.replica_types] == [
        ("PS", ""),
        ("Worker", "default-scheduler"),
    ]
