"""What Kubeflow training-operator v1.9 (``--gang-scheduler-name=volcano``) leaves in a cluster for
a TFJob it created and drives, built by hand from the operator's v1.9 source (its pods, services,
``TF_CONFIG``, status and PodGroup), never through tfgang's own builders: the adoption tests must prove
tfgang accepts the operator's objects, not its own.

A job of 1 PS and 2 Workers named ``J`` in namespace ``NS``:

- pods ``J-ps-0``, ``J-worker-0``, ``J-worker-1``: the template plus the operator's labels
  (``job-role: master`` on worker 0), the controller ownerReference, ``restartPolicy`` from the
  replica, ``schedulerName: volcano``, the annotations ``scheduling.k8s.io/group-name`` and
  ``volcano.sh/task-spec``, the ``tfjob-port`` port and ``TF_CONFIG`` last in the tensorflow env;
- one headless Service per pod, with the four labels (no job-role) as labels and selector;
- the PodGroup ``J``: the TFJob's annotations, the ownerReference, ``{minMember, queue,
  priorityClassName, minResources}``;
- the status the operator wrote: Created, then Running; replicaStatuses; startTime.
"""

from __future__ import annotations

import json
from typing import Any

OPERATOR_LABEL = "training.kubeflow.org/operator-name"
CPU = "100m"
MEMORY = "10Mi"


def tfjob(name: str, namespace: str, run_policy: dict[str, Any] | None = None) -> dict[str, Any]:
    def replica(replicas: int, restart_policy: str) -> dict[str, Any]:
        return {
            "replicas": replicas,
            "restartPolicy": restart_policy,
            "template": {
                "metadata": {"labels": {"team": "ml"}},
                "spec": {
                    "containers": [
                        {
                            "name": "tensorflow",
                            "image": "busybox:1.37.0-glibc",
                            "command": ["sh", "-c", "sleep 3600"],
                            "resources": {"requests": {"cpu": CPU, "memory": MEMORY}},
                        }
                    ]
                },
            },
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"owner": "team-ml"}},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "None", **(run_policy or {})},
            "tfReplicaSpecs": {"PS": replica(1, "Never"), "Worker": replica(2, "OnFailure")},
        },
    }


def owner(job: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "name": job["metadata"]["name"],
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _tf_config(name: str, namespace: str, rtype: str, index: int) -> str:
    # Compact JSON, keys cluster/task/environment, cluster keys sorted (upstream v1.9).
    cluster = {
        "ps": [f"{name}-ps-0.{namespace}.svc:2222"],
        "worker": [f"{name}-worker-{i}.{namespace}.svc:2222" for i in range(2)],
    }
    document = {"cluster": cluster, "task": {"type": rtype, "index": index}, "environment": "cloud"}
    return json.dumps(document, separators=(",", ":"))


def _labels(name: str, rtype: str, index: int) -> dict[str, str]:
    return {
        OPERATOR_LABEL: "tfjob-controller",
        "training.kubeflow.org/job-name": name,
        "training.kubeflow.org/replica-type": rtype,
        "training.kubeflow.org/replica-index": str(index),
    }


REPLICAS = (("ps", 0, "Never"), ("worker", 0, "OnFailure"), ("worker", 1, "OnFailure"))


def pods(job: dict[str, Any]) -> list[dict[str, Any]]:
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    built = []
    for rtype, index, restart_policy in REPLICAS:
        labels = {"team": "ml", **_labels(name, rtype, index)}
        if rtype == "worker" and index == 0:
            labels["training.kubeflow.org/job-role"] = "master"  # no Chief: worker 0 is the master role
        built.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{rtype}-{index}",
                    "namespace": namespace,
                    "labels": labels,
                    "annotations": {"scheduling.k8s.io/group-name": name, "volcano.sh/task-spec": rtype},
                    "ownerReferences": [owner(job)],
                },
                "spec": {
                    "restartPolicy": restart_policy,
                    "schedulerName": "volcano",
                    "containers": [
                        {
                            "name": "tensorflow",
                            "image": "busybox:1.37.0-glibc",
                            "command": ["sh", "-c", "sleep 3600"],
                            "resources": {"requests": {"cpu": CPU, "memory": MEMORY}},
                            "ports": [{"name": "tfjob-port", "containerPort": 2222}],
                            "env": [
                                {"name": "TF_CONFIG", "value": _tf_config(name, namespace, rtype, index)}
                            ],
                        }
                    ],
                },
            }
        )
    return built


def services(job: dict[str, Any]) -> list[dict[str, Any]]:
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": f"{name}-{rtype}-{index}",
                "namespace": namespace,
                "labels": _labels(name, rtype, index),
                "ownerReferences": [owner(job)],
            },
            "spec": {
                "clusterIP": "None",
                "selector": _labels(name, rtype, index),
                "ports": [{"name": "tfjob-port", "port": 2222}],
            },
        }
        for rtype, index, _ in REPLICAS
    ]


def podgroup(job: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": job["metadata"]["name"],
            "namespace": job["metadata"]["namespace"],
            "annotations": {"owner": "team-ml"},
            "ownerReferences": [owner(job)],
        },
        "spec": {
            "minMember": 3,
            "queue": "default",
            "priorityClassName": "",
            "minResources": {"cpu": "300m", "memory": "30Mi"},
        },
    }


def running_status(job: dict[str, Any], started: str) -> dict[str, Any]:
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    return {
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "TFJobCreated",
                "message": f"TFJob {name} is created.",
                "lastUpdateTime": started,
                "lastTransitionTime": started,
            },
            {
                "type": "Running",
                "status": "True",
                "reason": "TFJobRunning",
                "message": f"TFJob {namespace}/{name} is running.",
                "lastUpdateTime": started,
                "lastTransitionTime": started,
            },
        ],
        "replicaStatuses": {"PS": {"active": 1}, "Worker": {"active": 2}},
        "startTime": started,
        "lastReconcileTime": started,
    }


def succeeded_status(job: dict[str, Any], started: str, completed: str) -> dict[str, Any]:
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    status = running_status(job, started)
    status["conditions"][1]["status"] = "False"
    status["conditions"].append(
        {
            "type": "Succeeded",
            "status": "True",
            "reason": "TFJobSucceeded",
            "message": f"TFJob {namespace}/{name} successfully completed.",
            "lastUpdateTime": completed,
            "lastTransitionTime": completed,
        }
    )
    status["replicaStatuses"] = {"PS": {"succeeded": 1}, "Worker": {"succeeded": 2}}
    status["completionTime"] = completed
    return status
