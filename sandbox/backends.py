"""The API server a local cluster runs on: the sandbox's own (in this process), a real
kube-apiserver v1.20 with etcd (child processes, ``realcluster.apiserver``), or kube-apiserver
v1.37 with the real Volcano beside it (``realcluster.volcano``). They answer the same few
questions, asked from the cluster's event loop; ``has_volcano`` says whether the server brings
Volcano's CRDs and scheduler itself (otherwise the cluster installs the sandbox's)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from realcluster.apiserver import RealApiServer, RealApiServerOptions
from realcluster.kubeconfig import write_kubeconfig
from realcluster.requestrecord import RequestRecord
from sandbox.apiserver.server import ApiServer

SANDBOX = "sandbox"
KUBE_APISERVER = "kube-apiserver"
VOLCANO = "volcano"
KINDS = (SANDBOX, KUBE_APISERVER, VOLCANO)

__all__ = ["KINDS", "KUBE_APISERVER", "SANDBOX", "VOLCANO", "ClusterApiServer", "new_api_server"]


class ClusterApiServer(Protocol):
    url: str
    ca_pem: bytes
    admin_token: str
    has_volcano: bool

    async def start(self, port: int) -> None: ...
    async def stop(self) -> None: ...
    async def install_crd_file(self, path: str) -> None: ...
    async def apply_object(self, obj: dict[str, Any]) -> None: ...
    async def identity_kubeconfig(self, path: Path, user: str, groups: tuple[str, ...]) -> Path: ...
    async def request_log(self) -> list[RequestRecord]: ...


class SandboxApiServer:
    def __init__(self, watch_window: int) -> None:
        self.server = ApiServer(watch_window=watch_window)
        self.has_volcano = False
        self.url = ""
        self.ca_pem = b""
        self.admin_token = self.server.admin_token

    async def start(self, port: int) -> None:
        await self.server.start(port=port)
        self.url, self.ca_pem = self.server.url, self.server.material.ca_pem

    async def stop(self) -> None:
        await self.server.stop()

    async def install_crd_file(self, path: str) -> None:
        await self.server.install_file(path)

    async def apply_object(self, obj: dict[str, Any]) -> None:
        await self.server.apply_object(obj)

    async def identity_kubeconfig(self, path: Path, user: str, groups: tuple[str, ...]) -> Path:
        token = self.server.state.authenticator.add(user, groups)
        return Path(write_kubeconfig(str(path), self.url, self.ca_pem, token, user=path.stem))

    async def request_log(self) -> list[RequestRecord]:
        return self.server.state.request_log.records()


class KubeApiServer:
    """``RealApiServer``'s blocking calls, each on a worker thread."""

    has_volcano = False

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.real: RealApiServer | None = None
        self.url = ""
        self.ca_pem = b""
        self.admin_token = ""

    @property
    def _real(self) -> RealApiServer:
        if self.real is None:
            raise RuntimeError("kube-apiserver has not been started")
        return self.real

    async def start(self, port: int) -> None:
        # The cluster installs its own CRDs, as it does on the sandbox.
        options = RealApiServerOptions(
            workdir=self.workdir, port=port, install_volcano_crds=False, install_tfjob_crd=False
        )
        self.real = self._new(options)
        await asyncio.to_thread(self.real.start)
        self.url, self.ca_pem, self.admin_token = self.real.url, self.real.ca_pem, self.real.token

    def _new(self, options: RealApiServerOptions) -> RealApiServer:
        return RealApiServer(options)

    async def stop(self) -> None:
        if self.real is not None:
            await asyncio.to_thread(self.real.stop)

    async def install_crd_file(self, path: str) -> None:
        await asyncio.to_thread(self._real.install_crd_file, path)

    async def apply_object(self, obj: dict[str, Any]) -> None:
        await asyncio.to_thread(self._real.apply_object, obj)

    async def identity_kubeconfig(self, path: Path, user: str, groups: tuple[str, ...]) -> Path:
        _token, written = await asyncio.to_thread(self._real.add_user, user, groups, path)
        return Path(written)

    async def request_log(self) -> list[RequestRecord]:
        return await asyncio.to_thread(self._real.request_log)


class KubeWithVolcano(KubeApiServer):
    """kube-apiserver of the pinned current release with the real Volcano (``realcluster.volcano``)."""

    has_volcano = True

    def _new(self, options: RealApiServerOptions) -> RealApiServer:
        from realcluster.volcano import VolcanoCluster, find_components

        components = find_components()
        return VolcanoCluster(replace(options, bin_dir=components / "bin"), components=components)


def new_api_server(kind: str, workdir: Path, watch_window: int) -> ClusterApiServer:
    if kind == SANDBOX:
        return SandboxApiServer(watch_window)
    if kind == KUBE_APISERVER:
        return KubeApiServer(workdir)
    if kind == VOLCANO:
        return KubeWithVolcano(workdir)
    raise ValueError(f"unknown API server {kind!r}; one of {', '.join(KINDS)}")
