"""The node's network namespace: loopback, a veth pair with both ends inside (the node's address on
one end), a route for the Service range and no other: nothing in it can reach outside.

- The kubelet refuses a loopback node IP and this kernel has no ``dummy`` link, hence the veth pair.
- Processes of the node itself (kube-apiserver calling a webhook's Service, say) need a route to
  the Service range, or the kernel refuses the connection before kube-proxy's rules rewrite it.
- Forwarding and bridge netfilter are set inside the namespace (both are per namespace): a pod
  reaching another through a Service on the CNI bridge needs them.
"""

from __future__ import annotations

import subprocess

from realcluster.node.layout import NODE_IP, NODE_PREFIX, PEER_IP, SERVICE_CIDR, Node, NodeError, Step
from realcluster.node.sweep import sweep

__all__ = ["NetworkNamespace"]

NODE_LINK = "tfnode0"
PEER_LINK = "tfnode1"
SYSCTLS = {"net.ipv4.ip_forward": "1", "net.bridge.bridge-nf-call-iptables": "1"}


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, check=False)
    if done.returncode != 0:
        raise NodeError(f"ip {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")


class NetworkNamespace(Step):
    name = "netns"

    def up(self, node: Node) -> None:
        _ip("netns", "add", node.netns)
        ns = ("-n", node.netns)
        _ip(*ns, "link", "set", "lo", "up")
        _ip(*ns, "link", "add", NODE_LINK, "type", "veth", "peer", "name", PEER_LINK)
        _ip(*ns, "addr", "add", f"{NODE_IP}/{NODE_PREFIX}", "dev", NODE_LINK)
        _ip(*ns, "addr", "add", f"{PEER_IP}/{NODE_PREFIX}", "dev", PEER_LINK)
        _ip(*ns, "link", "set", NODE_LINK, "up")
        _ip(*ns, "link", "set", PEER_LINK, "up")
        _ip(*ns, "route", "add", SERVICE_CIDR, "dev", NODE_LINK)
        for key, value in SYSCTLS.items():
            node.run(["sysctl", "-q", "-w", f"{key}={value}"])

    def down(self, node: Node) -> None:
        """Everything left of the node goes with its namespace: its processes (pods' included),
        mounts and cgroups, then the namespace itself."""
        sweep(node.netns, node.cgroup, [node.workdir, node.rundir])
