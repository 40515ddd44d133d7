"""etcd (Debian's, linked into the components' ``bin/``) on the namespace's loopback, its data in
the work folder; kube-apiserver retries until it answers, so no wait here."""

from __future__ import annotations

from realcluster.node.layout import ETCD_PORT, Node, Step

__all__ = ["Etcd"]


class Etcd(Step):
    name = "etcd"

    def up(self, node: Node) -> None:
        client, peer = f"http://127.0.0.1:{ETCD_PORT}", f"http://127.0.0.1:{ETCD_PORT + 1}"
        node.start("etcd", [
            node.bin("etcd"), "--name", "node", "--data-dir", str(node.workdir / "etcd"),
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"node={peer}", "--unsafe-no-fsync",
        ])  # fmt: skip

    def down(self, node: Node) -> None:
        node.stop("etcd")
