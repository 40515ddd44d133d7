"""kube-apiserver inside the namespace: on every address there (the host's forward reaches it on
loopback, pods through the ``kubernetes`` Service at the node's address), Node and RBAC
authorization with NodeRestriction, service-account tokens signed by the node's key, and the
kubelet reached at the node's address with a client certificate of its own."""

from __future__ import annotations

from realcluster.apiserver import RealApiServerError
from realcluster.node.layout import APISERVER_PORT, ETCD_PORT, NODE_IP, SERVICE_CIDR, Node, Step

__all__ = ["KubeApiServer"]


class KubeApiServer(Step):
    name = "kube-apiserver"

    def __init__(self, timeout: float = 90.0) -> None:
        self.timeout = timeout

    def up(self, node: Node) -> None:
        pki = node.pki
        node.start("kube-apiserver", [
            node.bin("kube-apiserver"),
            "--bind-address=0.0.0.0", f"--secure-port={APISERVER_PORT}", f"--advertise-address={NODE_IP}",
            f"--etcd-servers=http://127.0.0.1:{ETCD_PORT}", f"--cert-dir={pki}",
            f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
            f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
            f"--kubelet-certificate-authority={pki / 'ca.crt'}",
            "--kubelet-preferred-address-types=InternalIP",
            "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--allow-privileged=true", "--profiling=false",
            f"--token-auth-file={pki / 'tokens.csv'}", f"--audit-policy-file={pki / 'audit-policy.yaml'}",
            f"--audit-log-path={node.log_dir / 'audit.log'}", "--audit-log-format=json",
            "--audit-log-mode=blocking",
        ])  # fmt: skip
        node.wait("kube-apiserver ready", lambda: _ready(node), self.timeout, "kube-apiserver.log")

    def down(self, node: Node) -> None:
        node.stop("kube-apiserver", grace=20)


def _ready(node: Node) -> bool:
    assert node.api is not None
    try:
        return node.api.run_kubectl("get", "--raw", "/readyz").strip() == "ok"
    except RealApiServerError:
        return False
