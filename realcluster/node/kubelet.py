"""The kubelet inside the namespace, registering the node at its address and running pods through
the node's containerd.

- cgroup v1 (``failCgroupV1: false``, which v1.37 still honours) with the cgroupfs driver, under a
  cgroup root of the node's own (``/tfgang-node-<hex>``, made here in every hierarchy, cpuset
  filled in from its parent) so that two nodes on one machine never share ``kubepods``.
- Its credentials are a static kubeconfig (a client certificate for ``system:node:<name>``, from
  the node's CA), no TLS bootstrap; it serves its API with a certificate for the node's address,
  authenticating callers by certificate or token review and authorizing them by
  SubjectAccessReview (kube-apiserver's own certificate is ``system:masters``), so ``kubectl logs``
  and ``exec`` work.
- DNS: CoreDNS at the kube-dns Service's address; pods of ``dnsPolicy: Default`` get an empty
  resolv.conf (the host's names servers are outside the namespace).
- No image garbage collection or disk eviction: the imported images cannot be pulled again.
- The kubelet changes kernel tunables at start (``realcluster.node.state`` puts them back).
"""

from __future__ import annotations

import contextlib
import json

from realcluster.apiserver import RealApiServerError
from realcluster.node import state
from realcluster.node.containerd import socket_path
from realcluster.node.layout import CLUSTER_DOMAIN, DNS_SERVICE_IP, NODE_IP, NODE_NAME, Node, Step
from realcluster.node.sweep import cgroup_dirs, kill_cgroup

__all__ = ["Kubelet"]


def _make_cgroup_root(node: Node) -> None:
    for folder in cgroup_dirs(node.cgroup):
        folder.mkdir(exist_ok=True)
        if folder.parent.name == "cpuset" or (folder / "cpuset.cpus").exists():
            # A new v1 cpuset starts empty; no task can join it until cpus and mems are set.
            for name in ("cpuset.cpus", "cpuset.mems"):
                with contextlib.suppress(FileNotFoundError):
                    if not (folder / name).read_text().strip():
                        (folder / name).write_text((folder.parent / name).read_text())


def _config(node: Node) -> dict[str, object]:
    pki = node.pki
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": node.cgroup,
        "containerRuntimeEndpoint": f"unix://{socket_path(node)}",
        "address": NODE_IP,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "tlsCertFile": str(pki / "kubelet.crt"),
        "tlsPrivateKeyFile": str(pki / "kubelet.key"),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "clusterDNS": [DNS_SERVICE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": str(node.workdir / "kubelet" / "resolv.conf"),
        "podLogsDir": str(node.workdir / "pod-logs"),
        "failSwapOn": False,
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "100Mi"},
        "serializeImagePulls": False,
        "staticPodPath": "",
        "maxPods": 110,
    }


class Kubelet(Step):
    name = "kubelet"

    def __init__(self, timeout: float = 120.0) -> None:
        self.timeout = timeout

    def up(self, node: Node) -> None:
        folder = node.workdir / "kubelet"
        (folder / "root").mkdir(parents=True, exist_ok=True)
        (node.workdir / "pod-logs").mkdir(exist_ok=True)
        (folder / "resolv.conf").write_text("")
        (folder / "config.json").write_text(json.dumps(_config(node), indent=2))
        _make_cgroup_root(node)
        state.save_tunables()
        node.start("kubelet", [
            node.bin("kubelet"), f"--config={folder / 'config.json'}",
            f"--kubeconfig={node.in_kubeconfig('kubelet')}", f"--root-dir={folder / 'root'}",
            f"--hostname-override={NODE_NAME}", f"--node-ip={NODE_IP}", "--v=2",
        ])  # fmt: skip
        node.wait("node Ready", lambda: _node_ready(node), self.timeout, "kubelet.log")

    def down(self, node: Node) -> None:
        """The kubelet, then its pods: their watches would hold kube-apiserver's shutdown up."""
        node.stop("kubelet", grace=15)
        kill_cgroup(node.cgroup)


def _node_ready(node: Node) -> bool:
    assert node.api is not None
    try:
        answer = json.loads(node.api.run_kubectl("get", "node", NODE_NAME, "-o", "json"))
    except (RealApiServerError, ValueError):
        return False
    conditions = (answer.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
