"""The TFJob CRD: accepts the seed and real-world TFJobs, refuses structurally wrong ones.

Objects go through ``kube.schema`` as kube-apiserver takes them: unknown fields pruned, nulls of
non-nullable fields dropped, defaults applied, then the schema's rules. The same cases against a
real kube-apiserver and the sandbox are in tests/integration/test_tfjob_schema_verdicts.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from tfjob_test_builders import CRD_PATH, container, make_job, replica, seed_job

from kube.schema import UNCHECKED_RULES, Admitted, StructuralSchema
from tfjob.constants import CLEAN_POD_POLICIES, MANAGED_BY_VALUES, RESTART_POLICIES, SUCCESS_POLICIES


def crd() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(CRD_PATH.read_text())
    return loaded


def version() -> dict[str, Any]:
    versions: list[dict[str, Any]] = crd()["spec"]["versions"]
    assert len(versions) == 1
    return versions[0]


def schema() -> StructuralSchema:
    return StructuralSchema.of_crd(crd())


def admitted(document: Any) -> Admitted:
    return schema().admit(document)


def errors_of(document: Any) -> list[str]:
    """The schema's errors on the object as stored; ``status`` is checked too (status writes)."""
    structural = schema()
    decoded = copy.deepcopy(document)
    structural.decode(decoded)
    return [str(error) for error in structural.validate(decoded)]


@pytest.mark.parametrize("seed", ["normal", "ps-failure", "worker-failure"])
def test_the_seed_yaml_is_accepted_verbatim(seed: str) -> None:
    assert errors_of(seed_job(seed)) == []


def real_world_job() -> dict[str, Any]:
    worker = replica(
        4,
        "ExitCode",
        containers=[
            container(
                ports=[{"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}],
                resources={"limits": {"nvidia.com/gpu": 1, "memory": "8Gi"}, "requests": {"cpu": "500m"}},
                env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            )
            | {"volumeMounts": [{"name": "data", "mountPath": "/data"}], "args": ["--steps", "100"]}
        ],
        volumes=[{"name": "data", "emptyDir": {}}],
        nodeSelector={"gpu": "true"},
        tolerations=[{"key": "gpu", "operator": "Exists"}],
        schedulerName="volcano",
        priorityClassName="high",
    )
    worker["template"]["metadata"] = {
        "labels": {"app": "x"},
        "annotations": {"a": "b"},
        "creationTimestamp": None,
    }
    job = make_job(
        {"PS": replica(2, "Always"), "Worker": worker, "Evaluator": None},
        successPolicy="AllWorkers",
        enableDynamicWorker=False,
        runPolicy={
            "cleanPodPolicy": "Running",
            "ttlSecondsAfterFinished": 60,
            "activeDeadlineSeconds": 3600,
            "backoffLimit": 3,
            "suspend": False,
            "managedBy": "kubeflow.org/training-operator",
            "schedulingPolicy": {
                "minAvailable": 3,
                "queue": "q1",
                "minResources": {"cpu": 10, "memory": "20Gi", "nvidia.com/gpu": "4"},
                "priorityClass": "high",
                "scheduleTimeoutSeconds": 120,
            },
        },
    )
    job["status"] = {
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "TFJobCreated",
                "message": "TFJob tj is created.",
                "lastUpdateTime": "2026-11-29T10:00:00Z",
                "lastTransitionTime": "2026-11-29T10:00:00Z",
            }
        ],
        "replicaStatuses": {"PS": {}, "Worker": {"active": 3, "failed": 1}},
        "startTime": "2026-11-29T10:00:01Z",
        "lastReconcileTime": "2026-11-29T10:00:01Z",
        "restartCounts": {"Worker": 2},
        "disruptions": 1,
        "gangRestart": {"pod": "tj-worker-1", "reason": "PreemptionByScheduler"},
        "disruptedPods": [{"name": "tj-worker-1", "uid": "8e1f0a52-3c1d-4d7e-9a43-1b2c3d4e5f60"}],
    }
    return dict(job)


def test_a_real_world_tfjob_with_status_is_accepted() -> None:
    assert errors_of(real_world_job()) == []


def broken(path: list[str | int], value: Any) -> dict[str, Any]:
    job = real_world_job()
    target: Any = job
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return job


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (["spec", "tfReplicaSpecs"], ["PS"]),
        (["spec", "tfReplicaSpecs", "Worker", "replicas"], "3"),
        (["spec", "tfReplicaSpecs", "Worker", "replicas"], 1.5),
        (["spec", "tfReplicaSpecs", "Worker", "restartPolicy"], 1),
        (["spec", "tfReplicaSpecs", "Worker", "template"], "pod"),
        (["spec", "tfReplicaSpecs", "Worker", "template", "spec", "containers"], {"name": "tensorflow"}),
        (
            [
                "spec",
                "tfReplicaSpecs",
                "Worker",
                "template",
                "spec",
                "containers",
                0,
                "ports",
                0,
                "containerPort",
            ],
            "2222",
        ),
        (["spec", "tfReplicaSpecs", "PS", "template", "spec", "containers", 0, "name"], None),
        (["spec", "tfReplicaSpecs"], {}),
        (["spec", "tfReplicaSpecs"], {"Worker": None}),
        (["spec", "tfReplicaSpecs", "Worker", "replicas"], -1),
        (["spec", "tfReplicaSpecs", "Worker", "restartPolicy"], "Sometimes"),
        (["spec", "tfReplicaSpecs", "Worker", "template", "spec"], {"nodeName": "n"}),
        (["spec", "successPolicy"], "AnyWorker"),
        (["spec", "runPolicy", "cleanPodPolicy"], "Some"),
        (["spec", "runPolicy", "managedBy"], "someone-else"),
        (["spec", "runPolicy", "suspend"], "yes"),
        (["spec", "runPolicy", "backoffLimit"], "3"),
        (["spec", "runPolicy", "schedulingPolicy", "minResources", "cpu"], "lots"),
        (["spec", "runPolicy", "schedulingPolicy", "minResources", "cpu"], 1.5),
        (["spec", "enableDynamicWorker"], "true"),
        (["status", "conditions"], [{"type": "Running"}]),
        (["status", "restartCounts", "Worker"], "2"),
        (["status", "disruptions"], "1"),
        (["status", "gangRestart", "pod"], 1),
        (["status", "disruptedPods"], "tj-worker-1"),
        (["status", "disruptedPods", 0, "uid"], 1),
        (["status", "replicaStatuses", "Worker", "active"], "3"),
    ],
)
def test_structurally_wrong_tfjobs_are_rejected(path: list[str | int], value: Any) -> None:
    assert errors_of(broken(path, value)) != []


@pytest.mark.parametrize(
    "path",
    [
        ["spec", "tfReplicaSpecs", "PS", "unknownField"],
        ["spec", "runPolicy", "unknownField"],
        ["spec", "unknownField"],
    ],
)
def test_unknown_fields_are_pruned_not_refused(path: list[str]) -> None:
    result = admitted(broken(path, 1))
    assert result.errors == ()
    assert result.pruned == (".".join(path),)


@pytest.mark.parametrize(
    "path",
    [
        ["spec", "runPolicy", "schedulingPolicy", "queue"],
        ["spec", "successPolicy"],
        ["spec", "tfReplicaSpecs", "Evaluator"],
        ["spec", "runPolicy", "backoffLimit"],
    ],
)
def test_nulls_of_non_nullable_fields_are_dropped(path: list[str]) -> None:
    result = admitted(broken(path, None))
    assert result.errors == ()
    target: Any = result.object
    for key in path[:-1]:
        target = target[key]
    assert path[-1] not in target


def test_a_null_suspend_takes_the_default() -> None:
    assert (
        admitted(broken(["spec", "runPolicy", "suspend"], None)).object["spec"]["runPolicy"]["suspend"]
        is False
    )


def test_status_is_ignored_on_create_as_with_the_status_subresource() -> None:
    result = admitted(broken(["status", "restartCounts", "Worker"], "2"))
    assert result.errors == ()
    assert "status" not in result.object


def test_tf_replica_specs_are_required() -> None:
    job = copy.deepcopy(seed_job("normal"))
    del job["spec"]["tfReplicaSpecs"]
    assert errors_of(job) == [
        "spec.tfReplicaSpecs: Required value",
        f"<nil>: Invalid value: null: {UNCHECKED_RULES}",
    ]


def test_a_job_without_replica_specs_is_refused_with_kube_apiservers_words() -> None:
    job = copy.deepcopy(seed_job("normal"))
    job["spec"]["tfReplicaSpecs"] = {"Worker": None}
    assert errors_of(job) == [
        "spec.tfReplicaSpecs: Invalid value: 0: spec.tfReplicaSpecs in body should have at least 1 properties"
    ]


def test_the_schemas_enums_are_the_webhooks_values() -> None:
    """The webhook (tfjob.validation) and the schema accept the same values; the webhook also "" for
    restartPolicy, which the schema lists too."""
    spec = version()["schema"]["openAPIV3Schema"]["properties"]["spec"]
    run_policy = spec["properties"]["runPolicy"]["properties"]
    replica_spec = spec["properties"]["tfReplicaSpecs"]["additionalProperties"]["properties"]
    assert tuple(spec["properties"]["successPolicy"]["enum"]) == SUCCESS_POLICIES
    assert tuple(run_policy["cleanPodPolicy"]["enum"]) == CLEAN_POD_POLICIES
    assert tuple(run_policy["managedBy"]["enum"]) == MANAGED_BY_VALUES
    assert tuple(replica_spec["restartPolicy"]["enum"]) == ("", *RESTART_POLICIES)
    assert replica_spec["replicas"]["minimum"] == 0


def test_container_resource_quantities_must_be_quantities() -> None:
    job = seed_job("normal")
    worker = job["spec"]["tfReplicaSpecs"]["Worker"]
    assert worker is not None
    worker["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "one"
    assert errors_of(job) != []


def test_crd_identity() -> None:
    document = crd()
    assert document["apiVersion"] == "apiextensions.k8s.io/v1"
    assert document["kind"] == "CustomResourceDefinition"
    assert document["metadata"]["name"] == "tfjobs.kubeflow.org"
    spec = document["spec"]
    assert spec["group"] == "kubeflow.org"
    assert spec["scope"] == "Namespaced"
    names = spec["names"]
    assert (names["kind"], names["plural"], names["singular"]) == ("TFJob", "tfjobs", "tfjob")
    assert names["shortNames"] == ["tfjob"]
    assert (version()["name"], version()["served"], version()["storage"]) == ("v1", True, True)


def test_crd_has_the_status_subresource_and_printer_columns() -> None:
    assert version()["subresources"] == {"status": {}}
    assert version()["additionalPrinterColumns"] == [
        {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


def test_crd_keeps_the_queue_immutable_with_a_cel_rule() -> None:
    run_policy = version()["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["runPolicy"]
    queue = run_policy["properties"]["schedulingPolicy"]["properties"]["queue"]
    assert queue["x-kubernetes-validations"] == [
        {"rule": "self == oldSelf", "message": "spec.runPolicy.schedulingPolicy.queue is immutable"}
    ]


def test_crd_defaults_suspend_to_false() -> None:
    run_policy = version()["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["runPolicy"]
    assert run_policy["properties"]["suspend"] == {"type": "boolean", "default": False}


def test_schema_is_structural() -> None:
    """Every node has a type (or is int-or-string / preserve-unknown), as apiextensions v1 demands."""

    def walk(node: dict[str, Any], path: str) -> list[str]:
        problems = []
        typed = "type" in node or node.get("x-kubernetes-int-or-string")
        if not typed and not node.get("x-kubernetes-preserve-unknown-fields"):
            problems.append(path)
        if node.get("x-kubernetes-int-or-string") and "type" in node:
            problems.append(f"{path} (int-or-string with a type)")
        for name, child in node.get("properties", {}).items():
            problems += walk(child, f"{path}.{name}")
        if isinstance(node.get("additionalProperties"), dict):
            problems += walk(node["additionalProperties"], f"{path}[*]")
        if isinstance(node.get("items"), dict):
            problems += walk(node["items"], f"{path}[]")
        return problems

    assert walk(version()["schema"]["openAPIV3Schema"], "") == []
