"""Raw API objects for scheduler tests, shaped as the API server returns them."""

from __future__ import annotations

from typing import Any


def node(
    name: str, cpu: str = "8", memory: str = "32Gi", *, ready: bool = True, pods: str = "110"
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
            "capacity": {"cpu": cpu, "memory": memory, "pods": pods},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    *,
    group: str | None = None,
    cpu: str = "1",
    memory: str = "100Mi",
    node_name: str | None = None,
    phase: str = "Pending",
    scheduler: str = "volcano",
    created: str = "2026-01-01T00:00:00Z",
    limits_only: bool = True,
    role: str | None = None,
    priority: int | None = None,
) -> dict[str, Any]:
    resources = (
        {"limits": {"cpu": cpu, "memory": memory}}
        if limits_only
        else {"requests": {"cpu": cpu, "memory": memory}}
    )
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "image": "busybox", "resources": resources}],
    }
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    annotations = {"scheduling.k8s.io/group-name": group} if group else {}
    if role is not None:
        annotations["volcano.sh/task-spec"] = role
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "annotations": annotations,
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def podgroup(
    name: str,
    min_member: int,
    *,
    min_resources: dict[str, str] | None = None,
    phase: str = "",
    queue: str = "default",
    created: str = "2026-01-01T00:00:00Z",
    conditions: list[dict[str, Any]] | None = None,
    min_task_member: dict[str, int] | None = None,
    network_topology: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if network_topology is not None:
        spec["networkTopology"] = network_topology
    if min_task_member is not None:
        spec["minTaskMember"] = min_task_member
    if min_resources is not None:
        spec["minResources"] = min_resources
    status: dict[str, Any] = {"phase": phase} if phase else {}
    if conditions:
        status["conditions"] = conditions
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"pg-{name}", "creationTimestamp": created},
        "spec": spec,
        "status": status,
    }


def queue(
    name: str = "default", *, state: str = "Open", capability: dict[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": 1}
    if capability:
        spec["capability"] = capability
    return {"metadata": {"name": name}, "spec": spec, "status": {"state": state}}


def hypernode(
    name: str, tier: int, *, nodes: tuple[str, ...] = (), children: tuple[str, ...] = ()
) -> dict[str, Any]:
    members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": c}}} for c in children]
    return {"metadata": {"name": name}, "spec": {"tier": tier, "members": members}}
