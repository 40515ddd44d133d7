"""kube-controller-manager and kube-scheduler inside the namespace, each with its own identity.

The controller manager runs every default controller (service-account tokens, endpoints and
EndpointSlices, ReplicaSets for the chart's Deployments, garbage collection, ...), with node IPAM
off: the CNI configuration gives the node's pod range itself (``containerd``). The scheduler
binds the pods of the default scheduler (tfgang's own webhook and controller); Volcano's scheduler
binds the gangs.
"""

from __future__ import annotations

from realcluster.node.layout import Node, Step

__all__ = ["ControlPlane"]


class ControlPlane(Step):
    name = "control plane"

    def up(self, node: Node) -> None:
        pki = node.pki
        node.start("kube-controller-manager", [
            node.bin("kube-controller-manager"),
            f"--kubeconfig={node.in_kubeconfig('kube-controller-manager')}",
            f"--authentication-kubeconfig={node.in_kubeconfig('kube-controller-manager')}",
            f"--authorization-kubeconfig={node.in_kubeconfig('kube-controller-manager')}",
            "--bind-address=127.0.0.1", "--leader-elect=false", "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
            "--allocate-node-cidrs=false", "--controllers=*",
        ])  # fmt: skip
        node.start("kube-scheduler", [
            node.bin("kube-scheduler"),
            f"--kubeconfig={node.in_kubeconfig('kube-scheduler')}",
            f"--authentication-kubeconfig={node.in_kubeconfig('kube-scheduler')}",
            f"--authorization-kubeconfig={node.in_kubeconfig('kube-scheduler')}",
            "--bind-address=127.0.0.1", "--leader-elect=false",
        ])  # fmt: skip

    def down(self, node: Node) -> None:
        node.stop("kube-scheduler")
        node.stop("kube-controller-manager")
