"""The one-node cluster works as a cluster: the node is Ready at its own address, its namespace has
no route out, CoreDNS answers for Service names, a busybox pod runs and its log comes back through
the kubelet, a pod reaches another through a Service. (tfgang on it: tests/realnode/installed/.)"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from realcluster.node.layout import NODE_IP, NODE_NAME
from realcluster.onenode import OneNode

pytestmark = [pytest.mark.real_node, pytest.mark.timeout(900)]

BUSYBOX = "busybox:1.37.0-glibc"


def _namespace(node: OneNode) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    node.kubectl("create", "namespace", name)
    return name


def _pod(name: str, namespace: str, script: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": BUSYBOX,
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", script],
                }
            ],
        },
    }


def _wait_phase(node: OneNode, namespace: str, pod: str, phase: str, timeout: str = "180s") -> None:
    node.kubectl(
        "wait",
        "-n",
        namespace,
        f"pod/{pod}",
        f"--for=jsonpath={{.status.phase}}={phase}",
        f"--timeout={timeout}",
    )


def _run_to_completion(node: OneNode, namespace: str, name: str, script: str) -> str:
    node.kubectl("create", "-f", "-", stdin=yaml.safe_dump(_pod(name, namespace, script)))
    try:
        _wait_phase(node, namespace, name, "Succeeded")
    finally:
        log = node.kubectl("logs", "-n", namespace, name)
    return log


def test_the_node_is_ready_at_its_own_address(one_node: OneNode) -> None:
    status = json.loads(one_node.kubectl("get", "node", NODE_NAME, "-o", "json"))["status"]
    ready = {c["type"]: c["status"] for c in status["conditions"]}["Ready"]
    addresses = {a["type"]: a["address"] for a in status["addresses"]}
    assert (ready, addresses["InternalIP"]) == ("True", NODE_IP)
    assert "https://127.0.0.1:" in Path(one_node.kubeconfig).read_text()


def test_the_namespace_has_no_route_out(one_node: OneNode) -> None:
    """Pods' traffic goes to the node's namespace, which routes only to its own ranges."""
    routes = [line.split()[0] for line in one_node.run(["ip", "-4", "route"]).splitlines() if line.strip()]
    assert routes and set(routes) <= {"10.88.0.0/24", "10.96.0.0/16", "10.244.0.0/24"}, routes


def test_a_busybox_pod_runs_and_its_log_comes_back(one_node: OneNode) -> None:
    namespace = _namespace(one_node)
    log = _run_to_completion(one_node, namespace, "hello", "echo hello from $(hostname)")
    assert log.strip() == "hello from hello"


def test_coredns_answers_for_service_names(one_node: OneNode) -> None:
    namespace = _namespace(one_node)
    log = _run_to_completion(
        one_node, namespace, "lookup", "nslookup kubernetes.default.svc.cluster.local && cat /etc/resolv.conf"
    )
    assert "10.96.0.1" in log
    assert "nameserver 10.96.0.10" in log


def test_a_pod_reaches_another_through_a_service_name(one_node: OneNode) -> None:
    namespace = _namespace(one_node)
    server = _pod(
        "server",
        namespace,
        "mkdir /www && echo pong > /www/ping && httpd -f -p 8080 -h /www",
        {"app": "ping"},
    )
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "ping", "namespace": namespace},
        "spec": {"selector": {"app": "ping"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    one_node.kubectl("create", "-f", "-", stdin=yaml.safe_dump_all([server, service]))
    one_node.kubectl("wait", "-n", namespace, "pod/server", "--for=condition=Ready", "--timeout=180s")
    # nc, not wget: the image's busybox wget crashes (static glibc).
    request = 'printf "GET /ping HTTP/1.0\\r\\n\\r\\n" | nc -w 5 ping 80'
    log = _run_to_completion(one_node, namespace, "client", request)
    assert log.startswith("HTTP/1.") and log.strip().endswith("pong"), log
