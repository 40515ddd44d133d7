"""What the node's actions share: its addresses and ranges, where its files are, the processes
running, and how a command is started inside the node's network namespace.

Addresses exist only inside the namespace (it has no route out), so fixed ones serve every run:
two nodes on one machine never see each other's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from certs.authority import CertificateAuthority
from realcluster.apiserver import ChildProcess, RealApiServer, RealApiServerError
from realcluster.volcano import RealVolcano

__all__ = ["Node", "NodeError", "Step"]

NODE_NAME = "tfgang-node"
NODE_IP = "10.88.0.2"
"""The node's InternalIP, on one end of a veth pair inside the namespace (the kubelet refuses a
loopback address, and this kernel has no dummy link type)."""
PEER_IP = "10.88.0.1"
NODE_PREFIX = 24
POD_CIDR = "10.244.0.0/24"
SERVICE_CIDR = "10.96.0.0/16"
API_SERVICE_IP = "10.96.0.1"
DNS_SERVICE_IP = "10.96.0.10"
CLUSTER_DOMAIN = "cluster.local"
APISERVER_PORT = 6443
ETCD_PORT = 2379


class NodeError(RealApiServerError):
    """A step of the one-node cluster failed."""


@dataclass
class Node:
    """The node being built: given its id, folders and the components, the steps fill the rest."""

    id: str
    """``tfgang-node-<hex>``: the network namespace, the cgroup and the state file are named so."""
    workdir: Path
    rundir: Path
    """Short path for Unix sockets (their paths are limited to 107 bytes)."""
    components: Path
    images: Path | None
    processes: dict[str, ChildProcess] = field(default_factory=dict)
    ca: CertificateAuthority | None = None
    token: str = ""
    """The admin's static token (kube-apiserver's token file)."""
    host_port: int = 0
    kubeconfig: str = ""
    """The host's admin kubeconfig: its server is the loopback port forwarded into the namespace."""
    api: RealApiServer | None = None
    """kubectl helpers on the host's kubeconfig (``RealApiServer.attached``)."""
    pause_image: str = ""
    volcano: RealVolcano | None = None

    @property
    def netns(self) -> str:
        return self.id

    @property
    def netns_path(self) -> str:
        return f"/run/netns/{self.netns}"

    @property
    def cgroup(self) -> str:
        """The kubelet's cgroup root, one per node (``kubepods`` goes below it)."""
        return f"/{self.id}"

    @property
    def log_dir(self) -> Path:
        return self.workdir / "logs"

    @property
    def pki(self) -> Path:
        return self.workdir / "pki"

    def bin(self, name: str) -> str:
        return str(self.components / "bin" / name)

    def in_netns(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the namespace. nsenter, not ``ip netns exec``: that makes a mount
        namespace per process, and containerd, the shims, runc and the kubelet must share mounts."""
        return ["nsenter", f"--net={self.netns_path}", "--", *argv]

    def in_kubeconfig(self, user: str) -> str:
        """The kubeconfig a process inside the namespace uses as ``user``."""
        return str(self.pki / f"{user}.kubeconfig")

    def start(
        self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None, *, inside: bool = True
    ) -> ChildProcess:
        """Start a daemon inside the namespace (or on the host), its output in ``logs/<name>.log``;
        the components' ``bin/`` first on its PATH (containerd finds its shim and runc there)."""
        environment = {**os.environ, "PATH": f"{self.components / 'bin'}:{os.environ.get('PATH', '')}"}
        command = self.in_netns(argv) if inside else list(argv)
        child = ChildProcess(name, command, self.log_dir / f"{name}.log", env={**environment, **(env or {})})
        self.processes[name] = child
        child.start()
        return child

    def stop(self, name: str, grace: float = 15.0) -> None:
        child = self.processes.pop(name, None)
        if child is not None:
            child.stop(grace)

    def check(self) -> None:
        for name, child in self.processes.items():
            if child.process is not None and not child.alive():
                raise NodeError(f"{name} exited with {child.process.returncode}; see {child.log_path}")

    def run(self, argv: Sequence[str], *, timeout: float = 120.0, stdin: bytes | None = None) -> str:
        """Run a command inside the namespace and return its output; NodeError when it fails."""
        done = subprocess.run(
            self.in_netns(argv), input=stdin, capture_output=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            error = (done.stderr or done.stdout).decode(errors="replace").strip()
            raise NodeError(f"{' '.join(argv)} failed ({done.returncode}): {error[-2000:]}")
        return done.stdout.decode(errors="replace")

    def http_ok(self, url: str) -> bool:
        """Whether ``url`` answers 200 inside the namespace (a daemon's health endpoint there)."""
        probe = (
            "import sys, urllib.request as r; o = r.build_opener(r.ProxyHandler({}));"
            "sys.exit(0 if o.open(sys.argv[1], timeout=3).status == 200 else 1)"
        )
        done = subprocess.run(
            self.in_netns([sys.executable, "-c", probe, url]), capture_output=True, timeout=30, check=False
        )
        return done.returncode == 0

    def wait(self, what: str, ready: Callable[[], bool], timeout: float, log: str | None = None) -> None:
        """Poll ``ready`` until it holds; NodeError naming ``what`` (and a log's tail) otherwise, or
        at once when a daemon died."""
        deadline = time.monotonic() + timeout
        while not ready():
            self.check()
            if time.monotonic() > deadline:
                tail = ""
                if log is not None and (self.log_dir / log).exists():
                    tail = "\n" + (self.log_dir / log).read_text(errors="replace")[-3000:]
                raise NodeError(f"no {what} within {timeout:.0f}s; logs in {self.log_dir}{tail}")
            time.sleep(0.5)


class Step:
    """One action of the node: ``up`` sets it up, ``down`` undoes it (also after a failed ``up``)."""

    name = ""

    def up(self, node: Node) -> None:
        raise NotImplementedError

    def down(self, node: Node) -> None:
        pass
