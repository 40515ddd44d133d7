"""Volcano as ``realcluster.volcano`` installs it (its chart rendered, each Deployment's container a
process), its processes inside the namespace and its webhooks registered by URL on the
namespace's loopback, where kube-apiserver calls them."""

from __future__ import annotations

from realcluster.node.layout import Node, NodeError, Step
from realcluster.volcano import RealVolcano

__all__ = ["Volcano"]


class Volcano(Step):
    name = "volcano"

    def __init__(self, scheduler_conf: str | None = None) -> None:
        self.scheduler_conf = scheduler_conf

    def up(self, node: Node) -> None:
        if node.api is None:
            raise NodeError("Volcano needs kube-apiserver first")
        node.volcano = RealVolcano(
            node.api, node.components, self.scheduler_conf,
            argv_prefix=tuple(node.in_netns([])), component_kubeconfig=node.in_kubeconfig("admin"),
        )  # fmt: skip
        node.volcano.start()

    def down(self, node: Node) -> None:
        if node.volcano is not None:
            node.volcano.stop()
            node.volcano = None
