"""The real one-node cluster (``realcluster.onenode``) as a backend of the local cluster and the seed
replay, with tfgang installed on it by ``helm install`` as its users install it
(``realcluster.helmrelease``): the webhook and the controller are that release's pods, so a cluster on
this backend starts no operator process, no node agent and no scheduler (the kubelet, containerd
and the real Volcano are the node's).

``OneNodeApiServer`` is the ``ClusterApiServer`` that ``tfgang-sandbox demo --apiserver node``
runs on; ``NodeReplayCluster`` is what ``SeedReplay`` needs of an already running node (the tests
share one node and one release for the whole session).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from realcluster.helmrelease import Images, Release
from realcluster.onenode import OneNode, find_images, start_one_node
from realcluster.requestrecord import RequestRecord
from realcluster.volcano import find_components


class NodeBackendError(RuntimeError):
    """The one-node cluster is used before it has started."""


class NodeReplayCluster:
    """A running node seen as ``SeedReplay``'s cluster: kubeconfigs, request log, a liveness check."""

    def __init__(self, node: OneNode, workdir: Path) -> None:
        self.node = node
        self.workdir = workdir
        self.kubeconfig = Path(node.kubeconfig)

    async def identity_kubeconfig(
        self, name: str, user: str, groups: tuple[str, ...] = ("system:authenticated",)
    ) -> Path:
        path = self.workdir / f"{name}.kubeconfig"
        # The node authorizes by RBAC: the replay's viewers are cluster admins, as the transcript's
        # kubectl was, each under a name of its own so that the audit log tells them apart.
        admins = (*groups, "system:masters")
        _token, written = await asyncio.to_thread(self.node.apiserver.add_user, user, admins, path)
        return Path(written)

    async def request_log(self) -> list[RequestRecord]:
        """Every API call so far, from the node's kube-apiserver's audit log."""
        return await asyncio.to_thread(self.node.apiserver.request_log)

    def check(self) -> None:
        self.node.check()


class OneNodeApiServer:
    """The one-node cluster started on a worker thread, then tfgang ``helm install``ed on it."""

    has_volcano = True
    runs_pods = True
    """The node's kubelet runs the pods and the release runs tfgang: the cluster starts neither."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.url = ""
        self.ca_pem = b""
        self.admin_token = ""
        self.admin_kubeconfig: Path | None = None
        self.release: Release | None = None
        self._stack = contextlib.ExitStack()
        self._replay: NodeReplayCluster | None = None

    async def start(self, port: int) -> None:
        # The node chooses its own forwarded port; ``port`` is for the in-process servers.
        await asyncio.to_thread(self._start)

    def _start(self) -> None:
        components = find_components()
        images = find_images()
        self.workdir.mkdir(parents=True, exist_ok=True)
        node = self._stack.enter_context(start_one_node(components, images, self.workdir / "node"))
        self.admin_kubeconfig = Path(node.kubeconfig)
        self._replay = NodeReplayCluster(node, self.workdir)
        self.url = _server_of(self.admin_kubeconfig)
        self.release = Release(
            helm=components / "bin" / "helm",
            kubectl=components / "bin" / "kubectl",
            kubeconfig=self.admin_kubeconfig,
            workdir=self.workdir,
            images=Images.read(images),
        )
        self.release.install()

    @property
    def _node(self) -> NodeReplayCluster:
        if self._replay is None:
            raise NodeBackendError("the one-node cluster has not been started")
        return self._replay

    async def stop(self) -> None:
        await asyncio.to_thread(self._stack.close)

    async def install_crd_file(self, path: str) -> None:
        # The release installed the TFJob CRD already (the chart's crds/); applying the same file
        # again changes nothing, and Volcano's come with the node.
        await asyncio.to_thread(self._apply_file, path)

    async def apply_object(self, obj: dict[str, Any]) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir=self.workdir, delete=False) as handle:
            json.dump(obj, handle)
        try:
            await asyncio.to_thread(self._apply_file, handle.name)
        finally:
            os.unlink(handle.name)

    def _apply_file(self, path: str) -> None:
        if self.release is None:
            raise NodeBackendError("the one-node cluster has not been started")
        self.release.run(["kubectl", "apply", "--server-side", "--force-conflicts", "-f", path])

    async def identity_kubeconfig(self, path: Path, user: str, groups: tuple[str, ...]) -> Path:
        return await self._node.identity_kubeconfig(path.stem, user, groups)

    async def request_log(self) -> list[RequestRecord]:
        return await self._node.request_log()


def _server_of(kubeconfig: Path) -> str:
    """The ``server`` of the kubeconfig's current context."""
    config = yaml.safe_load(kubeconfig.read_text())
    contexts = {entry["name"]: entry["context"] for entry in config.get("contexts") or ()}
    clusters = {entry["name"]: entry["cluster"] for entry in config.get("clusters") or ()}
    context = contexts.get(config.get("current-context", ""), {})
    return str(clusters.get(context.get("cluster", ""), {}).get("server", ""))


__all__ = ["NodeBackendError", "NodeReplayCluster", "OneNodeApiServer"]
