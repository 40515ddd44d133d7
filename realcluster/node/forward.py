"""The host's way in: a loopback port on the host forwarded to kube-apiserver inside the namespace.

Two ``socat`` processes meet at a Unix socket (a socket file is reachable from any network
namespace): one inside the namespace listens on the socket and connects to kube-apiserver, one on
the host listens on 127.0.0.1:PORT and connects to the socket. Tests and kubectl on the host use
the admin kubeconfig whose server is that port; kube-apiserver's certificate is valid for 127.0.0.1.
"""

from __future__ import annotations

import socket

from realcluster.apiserver import RealApiServer
from realcluster.node.layout import APISERVER_PORT, Node, Step
from realcluster.node.pki import admin_kubeconfig
from realcluster.ports import free_port

__all__ = ["LoopbackForward"]


class LoopbackForward(Step):
    name = "forward"

    def __init__(self, port: int = 0) -> None:
        self.port = port

    def up(self, node: Node) -> None:
        assert node.ca is not None
        sock = node.rundir / "apiserver.sock"
        node.start("forward-inside", [
            "socat", f"UNIX-LISTEN:{sock},fork,unlink-early,mode=600", f"TCP:127.0.0.1:{APISERVER_PORT}",
        ])  # fmt: skip
        node.host_port = self.port or free_port()
        node.start("forward-host", [
            "socat", f"TCP-LISTEN:{node.host_port},bind=127.0.0.1,fork,reuseaddr", f"UNIX-CONNECT:{sock}",
        ], inside=False)  # fmt: skip
        node.wait("the forward's socket", sock.exists, 10, "forward-inside.log")
        node.wait("the forward's port", lambda: _listening(node.host_port), 10, "forward-host.log")
        url = f"https://127.0.0.1:{node.host_port}"
        node.kubeconfig = admin_kubeconfig(node, node.workdir / "kubeconfig", url)
        node.api = RealApiServer.attached(
            url=url, kubeconfig=node.kubeconfig, ca=node.ca, token=node.token, workdir=node.workdir
        )

    def down(self, node: Node) -> None:
        node.stop("forward-host", grace=2)
        node.stop("forward-inside", grace=2)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
