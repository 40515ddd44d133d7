"""The node's certificates and kubeconfigs, all from one CA of its own.

- kube-apiserver's serving certificate is valid for 127.0.0.1 (the host reaches it through a
  loopback port), the node's address (its advertise address) and the ``kubernetes`` Service's
  address and names (pods reach it there).
- Each component has a client certificate with the identity Kubernetes' default RBAC expects
  (``system:kube-controller-manager``, ``system:kube-scheduler``, ``system:kube-proxy``,
  ``system:node:<name>`` in ``system:nodes``, which the Node authorizer knows); the admin, CoreDNS
  and Volcano are ``system:masters``. Certificates stand in for a kubelet's TLS bootstrap.
- The kubelet serves its own API (logs, exec) with a certificate for the node's address, which
  kube-apiserver checks against the CA, and kube-apiserver authenticates to it with a certificate
  of its own.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from pathlib import Path

import yaml

from certs.authority import new_ca
from certs.serving import issue_serving_certificate
from realcluster.apiserver import (
    ADMIN_USER,
    AUDIT_POLICY,
    client_certificate,
    write_private_file,
    write_service_account_keys,
)
from realcluster.kubeconfig import write_kubeconfig
from realcluster.node.layout import (
    API_SERVICE_IP,
    APISERVER_PORT,
    CLUSTER_DOMAIN,
    NODE_IP,
    NODE_NAME,
    Node,
    Step,
)

__all__ = ["IDENTITIES", "Certificates", "admin_kubeconfig"]

IDENTITIES: dict[str, tuple[str, Sequence[str]]] = {
    "admin": ("tfgang-node-admin", ("system:masters",)),
    "kube-controller-manager": ("system:kube-controller-manager", ()),
    "kube-scheduler": ("system:kube-scheduler", ()),
    "kube-proxy": ("system:kube-proxy", ()),
    "kubelet": (f"system:node:{NODE_NAME}", ("system:nodes",)),
}
"""Each in-namespace kubeconfig's user: (common name, organizations)."""


class Certificates(Step):
    name = "pki"

    def up(self, node: Node) -> None:
        pki = node.pki
        pki.mkdir(parents=True, exist_ok=True)
        node.ca = ca = new_ca(f"{node.id}-ca")
        write_private_file(pki / "ca.crt", ca.cert_pem)
        write_private_file(pki / "ca.key", ca.key_pem)
        write_service_account_keys(pki)
        # The admin's static token, as realcluster.apiserver has one (tests read the audit log
        # through it); every other identity is a certificate.
        node.token = secrets.token_hex(16)
        write_private_file(pki / "tokens.csv", f"{node.token},{ADMIN_USER},admin-uid,system:masters\n")
        write_private_file(pki / "audit-policy.yaml", yaml.safe_dump(AUDIT_POLICY))
        service_names = [
            "kubernetes", "kubernetes.default", "kubernetes.default.svc",
            f"kubernetes.default.svc.{CLUSTER_DOMAIN}",
        ]  # fmt: skip
        apiserver = issue_serving_certificate(
            ca, ["localhost", *service_names], ip_addresses=["127.0.0.1", NODE_IP, API_SERVICE_IP]
        )
        write_private_file(pki / "apiserver.crt", apiserver.cert_pem)
        write_private_file(pki / "apiserver.key", apiserver.key_pem)
        kubelet = issue_serving_certificate(ca, [NODE_NAME], ip_addresses=[NODE_IP])
        write_private_file(pki / "kubelet.crt", kubelet.cert_pem)
        write_private_file(pki / "kubelet.key", kubelet.key_pem)
        cert, key = client_certificate(ca, "kube-apiserver-kubelet-client", ["system:masters"])
        write_private_file(pki / "apiserver-kubelet-client.crt", cert)
        write_private_file(pki / "apiserver-kubelet-client.key", key)
        inside = f"https://127.0.0.1:{APISERVER_PORT}"
        for user, (common_name, groups) in IDENTITIES.items():
            client = client_certificate(ca, common_name, groups)
            write_kubeconfig(node.in_kubeconfig(user), inside, ca.cert_pem, "", user=user, client_cert=client)


def admin_kubeconfig(node: Node, path: Path, server: str) -> str:
    """The admin's kubeconfig for the host, whose server is the loopback forward."""
    assert node.ca is not None
    common_name, groups = IDENTITIES["admin"]
    client = client_certificate(node.ca, common_name, groups)
    return write_kubeconfig(str(path), server, node.ca.cert_pem, "", user="admin", client_cert=client)
