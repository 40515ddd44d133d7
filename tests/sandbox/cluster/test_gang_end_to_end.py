"""Gang scheduling end to end: TFJobs through the real webhook, controller, scheduler and node agent.

The shared cluster's three nodes of 2.5 cpu (7.5 in all, the default queue's capability):
- a job of 4 pods x 1.8 cpu is admitted (7.2 <= 7.5) but each node holds one such pod, so only 3
  fit: none is bound, the PodGroup carries the Unschedulable condition and the pods get
  FailedScheduling events;
- two jobs of 4 pods x 1 cpu each fit alone (4) but not together (8): they run one after the
  other and never both have pods on the nodes.
"""

from __future__ import annotations

import functools
import json
import subprocess
import time
from typing import Any

from realcluster.kubectl import find_kubectl
from sandbox.cluster import ClusterHandle
from tests.polling import wait_for

# A gang of four pods on small nodes takes a while to settle on a loaded machine.
wait_for_gang = functools.partial(wait_for, within=40.0)


def tfjob(name: str, cpu: str, seconds: float) -> dict[str, Any]:
    container = {
        "name": "tensorflow",
        "image": "busybox:1.37.0-glibc",
        "command": ["sh", "-c", f"sleep {seconds}"],
        "resources": {"limits": {"cpu": cpu, "memory": "10Mi"}},
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {
                    "replicas": 4,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [container]}},
                }
            }
        },
    }


def kubectl(handle: ClusterHandle, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [find_kubectl(), "--kubeconfig", str(handle.kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def get_json(handle: ClusterHandle, *args: str) -> Any:
    return json.loads(kubectl(handle, "get", *args, "-o", "json"))


def pods_of(handle: ClusterHandle, job: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = get_json(handle, "pods", "-l", f"training.kubeflow.org/job-name={job}")[
        "items"
    ]
    return items


def state_of(handle: ClusterHandle, job: str) -> str:
    conditions = (get_json(handle, "tfjob", job).get("status") or {}).get("conditions") or []
    return str(conditions[-1]["type"]) if conditions else ""


def test_room_for_three_of_four_pods_binds_none(operator_cluster: ClusterHandle) -> None:
    kubectl(operator_cluster, "apply", "-f", "-", stdin=json.dumps(tfjob("big", "1800m", 30)))
    wait_for_gang(lambda: len(pods_of(operator_cluster, "big")) == 4, "the controller to create the 4 pods")

    def unschedulable() -> dict[str, Any] | None:
        conditions = (get_json(operator_cluster, "podgroup", "big").get("status") or {}).get(
            "conditions"
        ) or []
        return next(
            (c for c in conditions if c.get("type") == "Unschedulable" and c.get("status") == "True"), None
        )

    condition = wait_for_gang(unschedulable, "the PodGroup's Unschedulable condition")
    assert condition["reason"] == "NotEnoughResources"
    for _ in range(10):  # a few scheduling periods: still none bound
        assert [pod["spec"].get("nodeName") for pod in pods_of(operator_cluster, "big")] == [None] * 4
        time.sleep(0.2)
    events = get_json(operator_cluster, "events", "--field-selector", "reason=FailedScheduling")["items"]
    assert {event["involvedObject"]["name"] for event in events} >= {f"big-worker-{i}" for i in range(4)}
    kubectl(operator_cluster, "delete", "tfjob", "big", "--wait=true")
    wait_for_gang(lambda: not pods_of(operator_cluster, "big"), "the pods to go")


def test_two_jobs_that_fit_alone_but_not_together_run_one_after_the_other(
    operator_cluster: ClusterHandle,
) -> None:
    both = "\n---\n".join(json.dumps(tfjob(name, "1", 2)) for name in ("first", "second"))
    kubectl(operator_cluster, "apply", "-f", "-", stdin=both)
    on_node: dict[str, set[int]] = {"first": set(), "second": set()}
    deadline = time.monotonic() + 60
    while not all(state_of(operator_cluster, job) == "Succeeded" for job in on_node):
        assert time.monotonic() < deadline, "both jobs should succeed, one after the other"
        occupying = {
            job: sum(
                1
                for pod in pods_of(operator_cluster, job)
                if pod["spec"].get("nodeName") and pod["status"].get("phase") in ("Pending", "Running")
            )
            for job in on_node
        }
        for job, count in occupying.items():
            on_node[job].add(count)
        assert 0 in occupying.values(), f"both jobs hold the node at once: {occupying}"
        time.sleep(0.1)
    assert 4 in on_node["first"] | on_node["second"]
    kubectl(operator_cluster, "delete", "tfjob", "first", "second", "--wait=true")
