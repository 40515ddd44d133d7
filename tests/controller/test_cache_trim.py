"""The controller's caches keep only what the planner reads: no managedFields anywhere, no pod spec,
nothing of a service but its metadata; and the planner decides the same on trimmed objects."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from controller.caches import trim, trim_pod, trim_service
from tfjob.facts import read_facts
from tfjob.planner import Observed, plan
from tfjob.pods import desired_pod
from tfjob.services import desired_service
from tfjob.settings import Settings

MANAGED = [{"manager": "kube-controller-manager", "operation": "Update", "fieldsV1": {"f:spec": {}}}]


def _job() -> dict[str, Any]:
    port = {"name": "tfjob-port", "containerPort": 2222}
    container = {"name": "tensorflow", "image": "tf", "ports": [port]}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "trim", "namespace": "default", "uid": "job-uid", "managedFields": MANAGED},
        "spec": {
            "tfReplicaSpecs": {
                "PS": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [container]}}},
            }
        },
    }


def _served(obj: dict[str, Any], phase: str | None = None) -> dict[str, Any]:
    """``obj`` as kube-apiserver would serve it: uid, resourceVersion, managedFields, status."""
    served = copy.deepcopy(obj)
    served["metadata"].update(
        {"uid": f"uid-{served['metadata']['name']}", "resourceVersion": "7", "managedFields": MANAGED}
    )
    if phase is not None:
        served["status"] = {"phase": phase}
    return served


def test_managed_fields_are_dropped_and_the_rest_is_kept() -> None:
    job = _job()
    trimmed = trim(copy.deepcopy(job))
    assert "managedFields" not in trimmed["metadata"]
    del job["metadata"]["managedFields"]
    assert trimmed == job


def test_a_pod_keeps_metadata_and_status_only() -> None:
    pod = _served(dict(desired_pod(read_facts(_job()), "Worker", 0)), phase="Running")
    trimmed = trim_pod(copy.deepcopy(pod))
    assert set(trimmed) == {"apiVersion", "kind", "metadata", "status"}
    assert "managedFields" not in trimmed["metadata"]
    assert trimmed["metadata"]["labels"] == pod["metadata"]["labels"]
    assert trimmed["status"] == {"phase": "Running"}


def test_a_service_keeps_its_metadata_only() -> None:
    service = _served(dict(desired_service(read_facts(_job()), "PS", 0)))
    service["status"] = {"loadBalancer": {}}
    trimmed = trim_service(copy.deepcopy(service))
    assert set(trimmed) == {"apiVersion", "kind", "metadata"}
    assert trimmed["metadata"]["ownerReferences"] == service["metadata"]["ownerReferences"]
    assert "managedFields" not in trimmed["metadata"]


def test_the_planner_decides_the_same_on_trimmed_objects() -> None:
    job = _job()
    pods = [
        _served(dict(desired_pod(read_facts(job), rtype, index)), phase="Running")
        for rtype, index in (("PS", 0), ("Worker", 0))
    ]
    services = [_served(dict(desired_service(read_facts(job), "PS", 0)))]
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "trim", "namespace": "default", "managedFields": MANAGED},
        "spec": {"minMember": 3},
        "status": {"phase": "Running"},
    }

    def decide(trimmed: bool) -> Any:
        def each(obj: dict[str, Any], how: Any) -> Any:
            return how(copy.deepcopy(obj)) if trimmed else copy.deepcopy(obj)

        observed = Observed(
            job=each(job, trim),
            pods=[each(pod, trim_pod) for pod in pods],
            services=[each(service, trim_service) for service in services],
            podgroup=each(podgroup, trim),
            priority_values={},
        )
        return plan(observed, datetime(2026, 12, 1, tzinfo=UTC), Settings())

    decided = decide(trimmed=True)
    assert decided.actions  # the missing worker pod and services, at least: a real decision
    assert decided == decide(trimmed=False)
