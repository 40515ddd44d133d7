"""The TFJob CRD: accepts the seed and real-world TFJobs, rejects structurally wrong ones.

The CRD's OpenAPI v3 schema is turned into a JSON Schema the way the API server reads it:
``nullable`` admits null, ``x-kubernetes-int-or-string`` admits integers and quantity strings,
``x-kubernetes-preserve-unknown-fields`` keeps unknown fields, and other objects reject unknown
fields (as ``kubectl --validate=strict`` does).
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
import yaml
from tfjob_test_builders import CRD_PATH, container, make_job, replica, seed_job


def crd() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(CRD_PATH.read_text())
    return loaded


def version() -> dict[str, Any]:
    versions: list[dict[str, Any]] = crd()["spec"]["versions"]
    assert len(versions) == 1
    return versions[0]


def to_json_schema(node: Any) -> Any:
    """OpenAPI v3 (Kubernetes structural schema) -> JSON Schema draft 7."""
    if isinstance(node, list):
        return [to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {
        key: to_json_schema(value)
        for key, value in node.items()
        if not key.startswith("x-kubernetes-") and key not in ("nullable", "description", "format", "default")
    }
    closed = "properties" in node and "additionalProperties" not in node
    if closed and not node.get("x-kubernetes-preserve-unknown-fields"):
        converted["additionalProperties"] = False
    if node.get("nullable"):
        converted = {"anyOf": [{"type": "null"}, converted]}
    return converted


def validator() -> jsonschema.Draft7Validator:
    schema = to_json_schema(version()["schema"]["openAPIV3Schema"])
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def errors_of(document: Any) -> list[str]:
    return [f"{list(error.absolute_path)}: {error.message}" for error in validator().iter_errors(document)]


def test_converter_handles_nullable_int_or_string_and_preserve_unknown_fields() -> None:
    schema = to_json_schema(
        {
            "type": "object",
            "properties": {
                "n": {"type": "object", "nullable": True, "properties": {"a": {"type": "string"}}},
                "q": {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "pattern": "^[0-9]+m?$",
                    "x-kubernetes-int-or-string": True,
                },
                "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {}},
            },
        }
    )
    check = jsonschema.Draft7Validator(schema)
    assert check.is_valid({"n": None, "q": 5, "open": {"anything": [1]}})
    assert check.is_valid({"n": {"a": "x"}, "q": "500m"})
    assert not check.is_valid({"q": "five"})
    assert not check.is_valid({"q": 1.5})
    assert not check.is_valid({"n": {"b": 1}})
    assert not check.is_valid({"unknown": 1})


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
        (["spec", "tfReplicaSpecs", "PS", "unknownField"], 1),
        (["spec", "runPolicy", "suspend"], "yes"),
        (["spec", "runPolicy", "backoffLimit"], "3"),
        (["spec", "runPolicy", "schedulingPolicy", "minResources", "cpu"], "lots"),
        (["spec", "runPolicy", "schedulingPolicy", "minResources", "cpu"], 1.5),
        (["spec", "runPolicy", "schedulingPolicy", "queue"], None),
        (["spec", "runPolicy", "unknownField"], True),
        (["spec", "successPolicy"], None),
        (["spec", "enableDynamicWorker"], "true"),
        (["spec", "unknownField"], 1),
        (["status", "conditions"], [{"type": "Running"}]),
        (["status", "restartCounts", "Worker"], "2"),
        (["status", "disruptions"], "1"),
        (["status", "gangRestart", "pod"], 1),
        (["status", "replicaStatuses", "Worker", "active"], "3"),
    ],
)
def test_structurally_wrong_tfjobs_are_rejected(path: list[str | int], value: Any) -> None:
    assert errors_of(broken(path, value)) != []


def test_tf_replica_specs_are_required() -> None:
    job = copy.deepcopy(seed_job("normal"))
    del job["spec"]["tfReplicaSpecs"]
    assert errors_of(job) == ["['spec']: 'tfReplicaSpecs' is a required property"]


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
