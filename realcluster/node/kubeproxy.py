"""kube-proxy inside the namespace in nftables mode (Debian's ``nft``), so Service addresses work
for pods and for the node's own processes (kube-apiserver calling a webhook's Service).

It leaves the machine's conntrack table size alone (``maxPerCore: 0``): that one is global, not the
namespace's.
"""

from __future__ import annotations

import json

from realcluster.node.layout import NODE_NAME, POD_CIDR, Node, Step

__all__ = ["KubeProxy"]


class KubeProxy(Step):
    name = "kube-proxy"

    def up(self, node: Node) -> None:
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "mode": "nftables",
            "clientConnection": {"kubeconfig": node.in_kubeconfig("kube-proxy")},
            "hostnameOverride": NODE_NAME,
            "clusterCIDR": POD_CIDR,
            "bindAddress": "0.0.0.0",
            "healthzBindAddress": "127.0.0.1:10256",
            "metricsBindAddress": "127.0.0.1:10249",
            "conntrack": {
                "maxPerCore": 0,
                "min": 0,
                "tcpEstablishedTimeout": "0s",
                "tcpCloseWaitTimeout": "0s",
            },
        }
        path = node.workdir / "kube-proxy.json"
        path.write_text(json.dumps(config, indent=2))
        node.start("kube-proxy", [node.bin("kube-proxy"), f"--config={path}", "--v=2"])

    def down(self, node: Node) -> None:
        node.stop("kube-proxy")
