"""CoreDNS as a process inside the namespace, behind the ``kube-dns`` Service.

A process rather than a Deployment: the binary is pinned with the other components (no image to
build or import first), it answers before any pod starts, and its log sits beside the others'.
The Service (``kube-system/kube-dns`` at the address the kubelet gives pods) has no selector; an
EndpointSlice of ours points it at the node's address, where CoreDNS listens. It serves the
cluster's names only: with no route out, there is nothing to forward other names to.
"""

from __future__ import annotations

from typing import Any

from realcluster.node.layout import CLUSTER_DOMAIN, DNS_SERVICE_IP, NODE_IP, Node, NodeError, Step

__all__ = ["CoreDns"]

READY_PORT = 8181


def _corefile(node: Node) -> str:
    return f""".:53 {{
    bind {NODE_IP}
    errors
    health 127.0.0.1:8080
    ready 127.0.0.1:{READY_PORT}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {node.in_kubeconfig("admin")}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 30
    loop
}}
"""


def _service_objects() -> list[dict[str, Any]]:
    ports = [("dns", "UDP"), ("dns-tcp", "TCP")]
    labels = {"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": labels},
        "spec": {
            "clusterIP": DNS_SERVICE_IP,
            "ports": [
                {"name": name, "port": 53, "protocol": protocol, "targetPort": 53} for name, protocol in ports
            ],
        },
    }
    endpoints = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "kube-dns-node",
            "namespace": "kube-system",
            "labels": {
                "kubernetes.io/service-name": "kube-dns",
                "endpointslice.kubernetes.io/managed-by": "tfgang-node",
            },
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [NODE_IP], "conditions": {"ready": True}}],
        "ports": [{"name": name, "port": 53, "protocol": protocol} for name, protocol in ports],
    }
    return [service, endpoints]


class CoreDns(Step):
    name = "coredns"

    def __init__(self, timeout: float = 60.0) -> None:
        self.timeout = timeout

    def up(self, node: Node) -> None:
        if node.api is None:
            raise NodeError("CoreDNS needs kube-apiserver first")
        corefile = node.workdir / "Corefile"
        corefile.write_text(_corefile(node))
        node.start("coredns", [node.bin("coredns"), "-conf", str(corefile)])
        for obj in _service_objects():
            node.api.apply_object(obj)
        ready = f"http://127.0.0.1:{READY_PORT}/ready"
        node.wait("CoreDNS ready", lambda: node.http_ok(ready), self.timeout, "coredns.log")

    def down(self, node: Node) -> None:
        node.stop("coredns")
