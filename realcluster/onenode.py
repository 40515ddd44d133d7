"""A one-node Kubernetes cluster in a network namespace of its own, built as kind builds one: an
ordered list of small actions (``realcluster.node``), set up in order and torn down in reverse.

- ``start_one_node(components, images, workdir)``: a context manager yielding a ``OneNode``:
  ``kubeconfig`` (the admin's, whose server is a loopback port forwarded into the namespace),
  ``run(argv)`` (a command inside the namespace), ``import_image(archive, name)``, ``apiserver``
  (what tests ask of an API server: ``add_user``, ``request_log``, ``run_kubectl``, ...),
  ``volcano`` (``set_scheduler_conf``).
- ``python -m realcluster up --kubeconfig PATH`` (``scripts/real-cluster``) runs one in the
  foreground until Ctrl-C.

The components come from ``scripts/real-components`` (``$TFGANG_REAL_COMPONENTS``), the images
from ``scripts/real-images`` (``$TFGANG_REAL_IMAGES``); either is built when its variable is unset,
and a missing one is an error. A run killed before its teardown is cleaned up by the next one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from realcluster.apiserver import RealApiServer, built_folder
from realcluster.node import state
from realcluster.node.apiserver import KubeApiServer
from realcluster.node.containerd import Containerd, import_image
from realcluster.node.controlplane import ControlPlane
from realcluster.node.coredns import CoreDns
from realcluster.node.etcd import Etcd
from realcluster.node.forward import LoopbackForward
from realcluster.node.kubelet import Kubelet
from realcluster.node.kubeproxy import KubeProxy
from realcluster.node.layout import Node, NodeError, Step
from realcluster.node.netns import NetworkNamespace
from realcluster.node.pki import Certificates
from realcluster.node.volcano import Volcano
from realcluster.volcano import RealVolcano, find_components

logger = logging.getLogger(__name__)

__all__ = ["IMAGES_ENV", "OneNode", "find_images", "start_one_node", "steps"]

IMAGES_ENV = "TFGANG_REAL_IMAGES"
IMAGES_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "real-images"
NODE_BINARIES = (
    "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "etcd",
    "containerd", "containerd-shim-runc-v2", "ctr", "runc", "coredns",
)  # fmt: skip
CNI_PLUGINS = ("bridge", "host-local", "loopback", "portmap")


def find_images() -> Path:
    """``$TFGANG_REAL_IMAGES``, else what ``scripts/real-images`` builds or reuses."""
    folder = built_folder(IMAGES_ENV, IMAGES_SCRIPT)
    if not (folder / "images.txt").exists():
        raise NodeError(f"{folder} has no images.txt")
    return folder


def _check_components(components: Path) -> None:
    missing = [name for name in NODE_BINARIES if not os.access(components / "bin" / name, os.X_OK)]
    missing += [
        f"cni/bin/{name}" for name in CNI_PLUGINS if not os.access(components / "cni" / "bin" / name, os.X_OK)
    ]
    if missing:
        raise NodeError(f"{components} lacks {', '.join(missing)}: run scripts/real-components build")


class Registered(Step):
    """The node's state file, written first and removed last: a later run cleans up after this one
    if it dies before its teardown; the last node to stop puts the kernel tunables back."""

    name = "state"

    def __init__(self, temporary: bool) -> None:
        self.temporary = temporary

    def up(self, node: Node) -> None:
        state.record(node.id, node.workdir, node.rundir, self.temporary)

    def down(self, node: Node) -> None:
        state.restore_tunables(node.id)
        shutil.rmtree(node.rundir, ignore_errors=True)
        if self.temporary:
            shutil.rmtree(node.workdir, ignore_errors=True)
        state.forget(node.id)


def steps(*, port: int = 0, scheduler_conf: str | None = None) -> list[Step]:
    """The node's actions in the order they are set up (torn down in reverse)."""
    return [
        NetworkNamespace(),
        Certificates(),
        LoopbackForward(port),
        Etcd(),
        KubeApiServer(),
        ControlPlane(),
        Containerd(),
        Kubelet(),
        KubeProxy(),
        CoreDns(),
        Volcano(scheduler_conf),
    ]


@dataclass
class OneNode:
    """A started one-node cluster; see the module docstring."""

    node: Node
    timings: dict[str, float]
    """Seconds each step's ``up`` took, in order."""

    @property
    def kubeconfig(self) -> str:
        return self.node.kubeconfig

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.node.host_port}"

    @property
    def log_dir(self) -> Path:
        return self.node.log_dir

    @property
    def workdir(self) -> Path:
        return self.node.workdir

    @property
    def netns(self) -> str:
        return self.node.netns

    @property
    def apiserver(self) -> RealApiServer:
        assert self.node.api is not None
        return self.node.api

    @property
    def volcano(self) -> RealVolcano:
        assert self.node.volcano is not None
        return self.node.volcano

    def run(self, argv: Sequence[str], *, timeout: float = 120.0, stdin: bytes | None = None) -> str:
        """Run a command inside the node's namespace; its output, NodeError when it fails."""
        return self.node.run(argv, timeout=timeout, stdin=stdin)

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        """kubectl on the host with the admin kubeconfig."""
        return self.apiserver.run_kubectl(*args, stdin=stdin)

    def import_image(self, archive: Path, name: str) -> None:
        """Make an oci-archive available to the kubelet under ``name`` (never pulled): a
        normalized reference, domain and path in full as ``images.txt`` names them, which is
        what CRI looks a pod's short image name up by."""
        import_image(self.node, archive, name)

    def check(self) -> None:
        """NodeError when one of the node's processes died."""
        self.node.check()
        if self.node.volcano is not None:
            self.node.volcano.check()


@contextlib.contextmanager
def start_one_node(
    components: Path | None = None,
    images: Path | None = None,
    workdir: Path | None = None,
    *,
    port: int = 0,
    scheduler_conf: str | None = None,
) -> Iterator[OneNode]:
    """Start the node (``steps``), yield it, tear it down; see the module docstring."""
    components = components or find_components()
    _check_components(components)
    images = images or find_images()
    for swept in state.clean_stale_nodes():
        logger.info("removed what node %s left behind", swept)
    node_id = f"tfgang-node-{secrets.token_hex(4)}"
    rundir = Path(tempfile.gettempdir()) / node_id
    rundir.mkdir(mode=0o700)
    temporary = workdir is None
    folder = Path(tempfile.mkdtemp(prefix=f"{node_id}-")) if workdir is None else workdir
    node = Node(node_id, folder, rundir, components, images)
    node.log_dir.mkdir(parents=True, exist_ok=True)
    done: list[Step] = []
    timings: dict[str, float] = {}
    try:
        for step in [Registered(temporary), *steps(port=port, scheduler_conf=scheduler_conf)]:
            started = time.monotonic()
            done.append(step)
            step.up(node)
            timings[step.name] = time.monotonic() - started
            logger.info("%s: %s up in %.1fs", node_id, step.name, timings[step.name])
        logger.info("%s up in %.1fs (logs in %s)", node_id, sum(timings.values()), node.log_dir)
        yield OneNode(node, timings)
    finally:
        started = time.monotonic()
        for step in reversed(done):
            begun = time.monotonic()
            try:
                step.down(node)
            except Exception:
                logger.exception("%s: tearing down %s failed", node_id, step.name)
            logger.info("%s: %s down in %.1fs", node_id, step.name, time.monotonic() - begun)
        logger.info("%s torn down in %.1fs", node_id, time.monotonic() - started)
