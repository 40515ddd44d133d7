"""The Node object a node agent registers, and the status it keeps fresh. Pure."""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from typing import Any, Final

from sandbox.kubelet.nodespec import NodeSpec

HOST_IP: Final = "127.0.0.1"
KUBELET_VERSION: Final = "v1.37.1-tfgang"
RUNTIME_VERSION: Final = "tfgang-sandbox://0.1.0"
_ARCH: Final = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}

HEALTHY_CONDITIONS: Final = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def architecture() -> str:
    machine = platform.machine().lower()
    return _ARCH.get(machine, machine or "amd64")


def node_labels(spec: NodeSpec) -> dict[str, str]:
    return {
        "kubernetes.io/hostname": spec.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": architecture(),
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": architecture(),
    }


def node_conditions(now: str, existing: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, str]]:
    """The healthy conditions with a fresh heartbeat; transition times survive unchanged statuses."""
    previous = {str(c.get("type")): c for c in existing if isinstance(c, Mapping)}
    conditions = []
    for type_, status, reason, message in HEALTHY_CONDITIONS:
        old = previous.get(type_) or {}
        since = str(old.get("lastTransitionTime") or now) if old.get("status") == status else now
        conditions.append(
            {
                "type": type_,
                "status": status,
                "lastHeartbeatTime": now,
                "lastTransitionTime": since,
                "reason": reason,
                "message": message,
            }
        )
    return conditions


def node_status(
    spec: NodeSpec, kubelet_port: int, now: str, existing: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    return {
        "capacity": dict(spec.capacity),
        "allocatable": dict(spec.capacity),
        "conditions": node_conditions(now, existing),
        "addresses": [{"type": "InternalIP", "address": HOST_IP}, {"type": "Hostname", "address": spec.name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
        "nodeInfo": {
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
            "kernelVersion": platform.release(),
            "osImage": "tfgang sandbox",
            "containerRuntimeVersion": RUNTIME_VERSION,
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": architecture(),
        },
    }


def node_object(spec: NodeSpec, kubelet_port: int, now: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": spec.name,
            "labels": node_labels(spec),
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {},
        "status": node_status(spec, kubelet_port, now),
    }
