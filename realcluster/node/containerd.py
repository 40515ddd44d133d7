"""containerd 2.x inside the namespace, with its own root, state and socket under the node's
folders, the CNI bridge for pods, and the images of ``images.txt`` imported before the kubelet
starts (nothing is ever pulled: the namespace has no route out).

- ``restrict_oom_score_adj``: processes here lack CAP_SYS_RESOURCE, so the negative
  ``oom_score_adj`` the kubelet asks for a pod sandbox would be refused and the sandbox fail.
- cgroupfs (no systemd), runc's state under the node's folder, pod network namespaces mounted
  under the state folder (not the machine's /run/netns), so the sweep finds them.
- The CNI configuration: the bridge plugin with host-local addresses from the node's pod range
  (its state in the node's folder), the bridge as the pods' gateway, no masquerading (there is
  nowhere to masquerade to), hairpin for a pod reaching itself through a Service.
- The sandbox (pause) image is the one ``images.txt`` names. CRI finds an image by its normalized
  reference (domain and path in full), which is how ``images.txt`` names them; an archive's
  index is kept under that name, whatever names its manifests carry.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from realcluster.node.layout import POD_CIDR, Node, NodeError, Step

__all__ = ["Containerd", "import_image", "read_images"]

CNI_BRIDGE = "cni0"
NAMESPACE = "k8s.io"


def read_images(folder: Path) -> list[tuple[Path, str]]:
    """``images.txt``'s lines: (archive, image name)."""
    images = []
    for line in (folder / "images.txt").read_text().splitlines():
        if line.strip():
            archive, name = line.split()[:2]
            images.append((folder / archive, name))
    return images


def socket_path(node: Node) -> Path:
    return node.rundir / "containerd.sock"


def ctr(node: Node, *args: str, timeout: float = 600.0) -> str:
    return node.run(
        [node.bin("ctr"), "--address", str(socket_path(node)), "-n", NAMESPACE, *args], timeout=timeout
    )


def import_image(node: Node, archive: Path, name: str) -> None:
    """Import an oci-archive as ``name``, a normalized reference (as CRI looks images up)."""
    # --local: the transfer service's import drops a name it was given for the index.
    ctr(node, "images", "import", "--local", "--index-name", name, str(archive))
    if name not in ctr(node, "images", "ls", "-q").split():
        raise NodeError(f"importing {archive} did not name {name}")


def _config(node: Node, pause_image: str) -> str:
    root, state = node.workdir / "containerd", node.rundir / "containerd"
    lines = [
        "version = 3",
        f"root = {json.dumps(str(root))}",
        f"state = {json.dumps(str(state))}",
        "[grpc]",
        f"  address = {json.dumps(str(socket_path(node)))}",
        "[ttrpc]",
        f"  address = {json.dumps(str(node.rundir / 'containerd-ttrpc.sock'))}",
        "[plugins.'io.containerd.cri.v1.images']",
        "  snapshotter = 'overlayfs'",
        "[plugins.'io.containerd.cri.v1.images'.pinned_images]",
        f"  sandbox = {json.dumps(pause_image)}",
        "[plugins.'io.containerd.cri.v1.runtime']",
        "  restrict_oom_score_adj = true",
        "  netns_mounts_under_state_dir = true",
        "  enable_unprivileged_ports = false",
        "  enable_unprivileged_icmp = false",
        "  cdi_spec_dirs = []",
        "[plugins.'io.containerd.cri.v1.runtime'.cni]",
        f"  bin_dirs = [{json.dumps(str(node.components / 'cni' / 'bin'))}]",
        f"  conf_dir = {json.dumps(str(node.workdir / 'cni' / 'net.d'))}",
        "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]",
        "  runtime_type = 'io.containerd.runc.v2'",
        "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]",
        f"  BinaryName = {json.dumps(node.bin('runc'))}",
        f"  Root = {json.dumps(str(node.rundir / 'runc'))}",
        "  SystemdCgroup = false",
    ]
    return "\n".join(lines) + "\n"


def _cni_config(node: Node) -> dict[str, object]:
    return {
        "cniVersion": "1.0.0",
        "name": "tfgang-node",
        "plugins": [
            {
                "type": "bridge",
                "bridge": CNI_BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_CIDR}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(node.workdir / "cni" / "ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


class Containerd(Step):
    name = "containerd"

    def __init__(self, timeout: float = 60.0) -> None:
        self.timeout = timeout

    def up(self, node: Node) -> None:
        images = read_images(node.images) if node.images is not None else []
        pauses = [name for _, name in images if "/pause:" in name or name.startswith("pause:")]
        if not pauses:
            raise NodeError(f"{node.images}/images.txt names no pause image (the pod sandbox)")
        node.pause_image = pauses[0]
        net_d = node.workdir / "cni" / "net.d"
        net_d.mkdir(parents=True, exist_ok=True)
        (net_d / "10-tfgang-node.conflist").write_text(json.dumps(_cni_config(node), indent=2))
        config = node.workdir / "containerd.toml"
        config.write_text(_config(node, node.pause_image))
        node.start("containerd", [node.bin("containerd"), "--config", str(config)])
        node.wait(
            "containerd socket", lambda: os.path.exists(socket_path(node)), self.timeout, "containerd.log"
        )
        node.wait("containerd answering", lambda: _answers(node), self.timeout, "containerd.log")
        for archive, name in images:
            import_image(node, archive, name)

    def down(self, node: Node) -> None:
        node.stop("containerd", grace=10)


def _answers(node: Node) -> bool:
    try:
        ctr(node, "version", timeout=10)
    except NodeError:
        return False
    return True
