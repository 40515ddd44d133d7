"""The whole local cluster: API server, gang scheduler, node agents and, on request, the operator.

The API server runs in this process; every other component is a child process with its own
identity (a bearer token and kubeconfig of its own, so the request log tells them apart): the
scheduler and the node agent as ``python -m sandbox scheduler|kubelet``, and with ``operator=True``
the webhook and the controller as ``python -m webhook|controller``, never imported here. The webhook
serves a certificate made by ``tfgang-certs issue`` and is registered with the chart's webhook
configurations (``sandbox.webhook_configs``); the TFJob CRD is the chart's own file.

``LocalCluster`` is the asyncio form (``async with LocalCluster(options) as cluster``);
``start_cluster(options)`` runs one on a background thread for synchronous callers such as tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

from kube.api import KubeApi
from kube.client import make_api_client
from kube.errors import ApiError, NotFound
from kube.resources import NODES, QUEUES_V1BETA1
from realcluster.crds import VOLCANO_CRD_FILES, tfjob_crd_path
from realcluster.kubeconfig import write_kubeconfig
from realcluster.ports import free_port
from realcluster.requestrecord import RequestRecord
from sandbox.apiserver.faults import StandingFaults
from sandbox.apiserver.server import ApiServer
from sandbox.apiserver.storage import DEFAULT_WATCH_WINDOW
from sandbox.backends import SANDBOX, ClusterApiServer, SandboxApiServer, new_api_server
from sandbox.supervisor import ChildFailed, ChildSpec, Supervisor
from sandbox.webhook_configs import OPERATOR_NAMESPACE, ca_bundle_of, controller_scope, webhook_configurations

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_NODES = "las1:cpu=8,memory=32Gi"
WEBHOOK_SERVICE = "tfgang-webhook"

__all__ = [
    "DEFAULT_NODES",
    "ClusterError",
    "ClusterHandle",
    "ClusterOptions",
    "LocalCluster",
    "start_cluster",
]


class ClusterError(RuntimeError):
    """The cluster could not start, or one of its components died."""


@dataclass(frozen=True)
class Identity:
    user: str
    groups: tuple[str, ...]


# What each component would be in a real cluster, so audit-style checks read naturally.
SCHEDULER_IDENTITY = Identity(
    "system:serviceaccount:volcano-system:volcano-scheduler",
    ("system:serviceaccounts", "system:authenticated"),
)
WEBHOOK_IDENTITY = Identity(
    f"system:serviceaccount:{OPERATOR_NAMESPACE}:tfgang-webhook",
    ("system:serviceaccounts", "system:authenticated"),
)
CONTROLLER_IDENTITY = Identity(
    f"system:serviceaccount:{OPERATOR_NAMESPACE}:tfgang-controller",
    ("system:serviceaccounts", "system:authenticated"),
)


def node_identity(nodes: str) -> Identity:
    first = nodes.split(";")[0].split(":")[0].strip() or "node"
    return Identity(f"system:node:{first}", ("system:nodes", "system:authenticated"))


@dataclass(frozen=True)
class ClusterOptions:
    nodes: str = DEFAULT_NODES
    """The node agent's ``--nodes`` spec; empty runs no node agent."""
    operator: bool = False
    port: int = 0
    """The API server's HTTPS port on 127.0.0.1; 0 picks a free one."""
    kubeconfig: Path | None = None
    """Where to write the admin kubeconfig; inside ``workdir`` when not given."""
    workdir: Path | None = None
    """Kubeconfigs, certificates and component logs; a temporary directory when not given."""
    backoff_base: float = 10.0
    """The node agent's first crash-loop back-off (the kubelet's 10 s unless shortened for tests)."""
    scheduler_period: float = 1.0
    tfjob_crd: str | None = None
    watch_window: int = DEFAULT_WATCH_WINDOW
    """Watch events the API server keeps for resuming watches before answering 410 Gone."""
    startup_timeout: float = 60.0
    log_level: str = "INFO"
    faults: StandingFaults = field(default_factory=StandingFaults)
    """Standing faults of the API server, in force once every component is ready."""
    controller_flags: tuple[str, ...] = ()
    """Extra flags of the controller process (``--leader-elect``, lease timings, ...)."""
    apiserver: str = SANDBOX
    """``sandbox`` (in this process), ``kube-apiserver`` (a real v1.20 with etcd; see
    ``realcluster.apiserver``) or ``volcano`` (kube-apiserver v1.37 with the real Volcano, whose
    scheduler replaces the sandbox's; see ``realcluster.volcano``)."""


def child_environment() -> dict[str, str]:
    """This process's environment without settings meant for it: every child gets explicit flags."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("TFGANG_") and key != "KUBECONFIG"
    }


def _python(*args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", *args)


class LocalCluster:
    def __init__(self, options: ClusterOptions = ClusterOptions()) -> None:
        self.options = options
        self._server: ClusterApiServer | None = None
        self._stopped = False
        self.supervisor = Supervisor()
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self.workdir = Path()
        self.kubeconfig = Path()
        self.kubeconfigs: dict[str, Path] = {}
        self.webhook_port = 0
        self.ops_ports: dict[str, int] = {}

    @property
    def server(self) -> ClusterApiServer:
        if self._server is None:
            raise ClusterError("the cluster has not been started")
        return self._server

    @property
    def sandbox_server(self) -> ApiServer:
        """The sandbox API server object, for tests that reach into it; not on kube-apiserver."""
        if not isinstance(self._server, SandboxApiServer):
            raise ClusterError("the cluster does not run on the sandbox API server")
        return self._server.server

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def log_dir(self) -> Path:
        return self.workdir / "logs"

    async def __aenter__(self) -> LocalCluster:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.stop()

    # -- start ------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self.options.workdir is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="tfgang-cluster-")
            self.workdir = Path(self._scratch.name)
        else:
            self.workdir = self.options.workdir
            self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            async with asyncio.timeout(self.options.startup_timeout):
                await self._start()
        except TimeoutError as error:
            await self.stop()
            limit = self.options.startup_timeout
            raise ClusterError(
                f"the cluster was not ready within {limit}s; logs in {self.log_dir}"
            ) from error
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        self._server = new_api_server(
            self.options.apiserver, self.workdir / "apiserver", self.options.watch_window
        )
        await self.server.start(port=self.options.port)
        if not self.server.has_volcano:
            for path in VOLCANO_CRD_FILES:
                await self.server.install_crd_file(path)
        self.kubeconfig = Path(
            write_kubeconfig(
                str(self.options.kubeconfig or self.workdir / "admin.kubeconfig"),
                self.url,
                self.server.ca_pem,
                self.server.admin_token,
            )
        )
        crd = self.options.tfjob_crd or tfjob_crd_path() or ""
        crd_exists: bool = bool(crd) and await asyncio.to_thread(os.path.isfile, crd)
        if crd_exists:
            await self.server.install_crd_file(crd)
        elif self.options.operator:
            raise ClusterError(
                "the chart's TFJob CRD (charts/tfgang/crds) was not found; set TFGANG_TFJOB_CRD"
            )
        api = KubeApi(await make_api_client(str(self.kubeconfig)), user_agent="tfgang-sandbox-cluster")
        try:
            # The real Volcano brings its own scheduler; otherwise the sandbox's plays it.
            waits: list[Awaitable[None]] = [] if self.server.has_volcano else [self._start_scheduler(api)]
            if self.options.nodes:
                waits.append(self._start_node_agent(api))
            if self.options.operator:
                waits.append(self._start_operator())
            await asyncio.gather(*waits)
        finally:
            await api.close()
        self.supervisor.check()
        if isinstance(self._server, SandboxApiServer):
            self._server.server.faults.standing = self.options.faults
        elif self.options.faults != StandingFaults():
            raise ClusterError("standing faults are a sandbox API server feature")
        logger.info("local cluster ready at %s", self.url)

    async def _identity_kubeconfig(self, component: str, identity: Identity) -> str:
        path = await self.identity_kubeconfig(component, identity.user, identity.groups)
        self.kubeconfigs[component] = path
        return str(path)

    async def identity_kubeconfig(
        self, name: str, user: str, groups: tuple[str, ...] = ("system:authenticated",)
    ) -> Path:
        """A kubeconfig ``<workdir>/<name>.kubeconfig`` for a new identity ``user``."""
        return await self.server.identity_kubeconfig(self.workdir / f"{name}.kubeconfig", user, groups)

    async def request_log(self) -> list[RequestRecord]:
        """Every API call so far, oldest first (on kube-apiserver: read from its audit log)."""
        return await self.server.request_log()

    def _spec(self, name: str, argv: tuple[str, ...], stop_signal: int = signal.SIGTERM) -> ChildSpec:
        return ChildSpec(
            name=name,
            argv=argv,
            log_path=self.log_dir / f"{name}.log",
            env=child_environment(),
            stop_signal=stop_signal,
        )

    async def _start_scheduler(self, api: KubeApi) -> None:
        kubeconfig = await self._identity_kubeconfig("scheduler", SCHEDULER_IDENTITY)
        argv = _python(
            "sandbox", "scheduler", "--kubeconfig", kubeconfig,
            "--period", str(self.options.scheduler_period), "--log-level", self.options.log_level,
        )  # fmt: skip
        await self.supervisor.start(self._spec("scheduler", argv, signal.SIGINT))
        await self._until(lambda: _queue_open(api, "default"), "the scheduler to open the default queue")

    async def _start_node_agent(self, api: KubeApi) -> None:
        kubeconfig = await self._identity_kubeconfig("kubelet", node_identity(self.options.nodes))
        argv = _python(
            "sandbox", "kubelet", "--kubeconfig", kubeconfig, "--nodes", self.options.nodes,
            "--backoff-base", str(self.options.backoff_base), "--log-level", self.options.log_level,
        )  # fmt: skip
        await self.supervisor.start(self._spec("kubelet", argv, signal.SIGINT))
        names = [part.split(":")[0].strip() for part in self.options.nodes.split(";") if part.strip()]
        for name in names:
            await self._until(functools.partial(_node_ready, api, name), f"node {name} to be Ready")

    async def _start_operator(self) -> None:
        cert_dir = self.workdir / "webhook-certs"
        await self._issue_certificate(cert_dir)
        self.webhook_port = free_port()
        self.ops_ports = {"webhook": free_port()}
        webhook_kubeconfig = await self._identity_kubeconfig("webhook", WEBHOOK_IDENTITY)
        controller_kubeconfig = await self._identity_kubeconfig("controller", CONTROLLER_IDENTITY)
        webhook = _python(
            "webhook", "--kubeconfig", webhook_kubeconfig, "--cert-dir", str(cert_dir),
            "--host", "127.0.0.1", "--port", str(self.webhook_port),
            "--ops-port", str(self.ops_ports["webhook"]), "--log-level", self.options.log_level,
        )  # fmt: skip
        await self.supervisor.start(self._spec("webhook", webhook))
        await self._until(lambda: _http_ok(self.ops_ports["webhook"]), "the webhook to be ready")
        ca_bundle = ca_bundle_of((cert_dir / "ca.crt").read_bytes())
        for configuration in webhook_configurations(f"https://127.0.0.1:{self.webhook_port}", ca_bundle):
            await self.server.apply_object(configuration)
        await self.start_controller("controller", controller_kubeconfig)

    async def start_controller(self, name: str, kubeconfig: str | None = None) -> int:
        """Start a controller process called ``name`` (a second replica, say) with the cluster's
        controller flags and, unless given a kubeconfig, an identity of its own; its ops port once
        it is ready (a standby waiting for the Lease is ready too)."""
        if kubeconfig is None:
            identity = Identity(f"{CONTROLLER_IDENTITY.user}-{name}", CONTROLLER_IDENTITY.groups)
            kubeconfig = await self._identity_kubeconfig(name, identity)
        port = self.ops_ports[name] = free_port()
        flags = self.options.controller_flags
        if not any(flag.startswith("--namespace-selector") for flag in flags):
            flags = ("--namespace-selector", await asyncio.to_thread(controller_scope), *flags)
        controller = _python(
            "controller", "--kubeconfig", kubeconfig, "--ops-host", "127.0.0.1",
            "--ops-port", str(port), "--log-level", self.options.log_level, *flags,
        )  # fmt: skip
        await self.supervisor.start(self._spec(name, controller))
        await self._until(lambda: _http_ok(port), f"{name} to be ready")
        return port

    async def restart(self, name: str) -> None:
        """Start a component that was killed on purpose again, and wait until it is ready."""
        await self.supervisor.restart(name)
        port = self.ops_ports.get(name)
        if port is not None:
            await self._until(lambda: _http_ok(port), f"{name} to be ready again")

    async def _issue_certificate(self, cert_dir: Path) -> None:
        log_path = self.log_dir / "certs.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        argv = _python(
            "certs", "issue", "--service", WEBHOOK_SERVICE, "--namespace", OPERATOR_NAMESPACE,
            "--out", str(cert_dir), "--ip-address", "127.0.0.1",
        )  # fmt: skip
        with log_path.open("ab") as log:
            process = await asyncio.create_subprocess_exec(
                *argv, env=child_environment(), stdout=log, stderr=asyncio.subprocess.STDOUT
            )
            code = await process.wait()
        if code != 0:
            raise ClusterError(f"tfgang-certs issue failed with code {code}; see {log_path}")

    async def _until(self, check: Callable[[], Awaitable[bool]], what: str) -> None:
        """Poll ``check``; give up at once if a component dies meanwhile."""
        while True:
            if self.supervisor.failed.is_set():
                raise ClusterError(f"waiting for {what}: {self.supervisor.failure}")
            if await check():
                return
            await asyncio.sleep(0.1)

    # -- running and stopping -------------------------------------------------------------------

    def check(self) -> None:
        """Raise ``ClusterError`` if a component has died."""
        try:
            self.supervisor.check()
        except ChildFailed as error:
            raise ClusterError(str(error)) from error

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        await self.supervisor.stop_all()
        if self._server is not None:
            await self._server.stop()
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None


async def _queue_open(api: KubeApi, name: str) -> bool:
    try:
        queue = await api.get(QUEUES_V1BETA1, name)
    except NotFound:
        return False
    except ApiError:
        return False
    return (queue.get("status") or {}).get("state") == "Open"


async def _node_ready(api: KubeApi, name: str) -> bool:
    try:
        node = await api.get(NODES, name)
    except ApiError:
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


async def _http_ok(port: int) -> bool:
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session,
            session.get(f"http://127.0.0.1:{port}/readyz") as response,
        ):
            return response.status == 200
    except (aiohttp.ClientError, OSError, TimeoutError):
        return False


# -- a cluster on a background thread ------------------------------------------------------------


@dataclass
class ClusterHandle:
    """A running ``LocalCluster`` seen from another thread."""

    cluster: LocalCluster
    loop: asyncio.AbstractEventLoop
    kubeconfig: Path = field(init=False)
    url: str = field(init=False)

    def __post_init__(self) -> None:
        self.kubeconfig = self.cluster.kubeconfig
        self.url = self.cluster.url

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def check(self) -> None:
        self.cluster.check()

    def request_log(self) -> list[RequestRecord]:
        return self.call(self.cluster.request_log())


@contextlib.contextmanager
def start_cluster(options: ClusterOptions = ClusterOptions()) -> Iterator[ClusterHandle]:
    """Run a ``LocalCluster`` on its own event loop thread for the duration of the ``with``."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="tfgang-cluster", daemon=True)
    thread.start()
    cluster = LocalCluster(options)
    try:
        asyncio.run_coroutine_threadsafe(cluster.start(), loop).result(options.startup_timeout + 30)
        yield ClusterHandle(cluster, loop)
    finally:
        started = time.monotonic()
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(cluster.stop(), loop).result(60)
        logger.info("cluster stopped in %.1fs", time.monotonic() - started)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
