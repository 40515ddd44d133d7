"""Start a sandbox API server for tests: ``with start_apiserver() as api:``.

The server runs on its own event loop in a background thread, so sync tests, async tests and
tests that run kubectl in a subprocess can all use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from realcluster.crds import VOLCANO_CRD_FILES, tfjob_crd_path
from realcluster.kubeconfig import write_kubeconfig
from realcluster.requestrecord import RequestRecord
from sandbox.apiserver.admission import ServiceRoute
from sandbox.apiserver.faults import FaultRequest, apply_request
from sandbox.apiserver.server import ApiServer
from sandbox.apiserver.storage import DEFAULT_WATCH_WINDOW

logger = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = ["ApiServerHandle", "RequestRecord", "start_apiserver"]


class ApiServerHandle:
    """A running sandbox API server, as tests see it."""

    def __init__(self, server: ApiServer, loop: asyncio.AbstractEventLoop, directory: str) -> None:
        self._server = server
        self._loop = loop
        self._directory = directory
        self.url: str = server.url
        self.ca_pem: bytes = server.material.ca_pem
        self.token: str = server.admin_token
        self.kubeconfig: str = write_kubeconfig(
            os.path.join(directory, "admin.kubeconfig"), self.url, self.ca_pem, self.token
        )

    @property
    def server(self) -> ApiServer:
        """The server object itself; touch it only through ``call`` (it lives on another loop)."""
        return self._server

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run a coroutine on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def _run_sync(self, function: Any, *args: Any) -> Any:
        async def invoke() -> Any:
            return function(*args)

        return self.call(invoke())

    def add_user(self, user: str, groups: tuple[str, ...] = ("system:authenticated",)) -> tuple[str, str]:
        """A new identity: its bearer token and a kubeconfig path for it."""
        token: str = self._run_sync(self._server.state.authenticator.add, user, groups)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in user)
        path = write_kubeconfig(
            os.path.join(self._directory, f"{safe}.kubeconfig"), self.url, self.ca_pem, token, user=safe
        )
        return token, path

    def request_log(self) -> list[RequestRecord]:
        """Every API call so far, oldest first (a watch is recorded when its stream opens)."""
        records: list[RequestRecord] = self._run_sync(self._server.state.request_log.records)
        return records

    def clear_request_log(self) -> None:
        self._run_sync(self._server.state.request_log.clear)

    def expire_watches(self) -> None:
        """Compact the history and end every open watch: each watcher comes back with a
        resourceVersion that is now too old and gets 410 Gone."""

        async def expire() -> None:
            self._server.state.storage.compact()
            self._server.state.storage.close_all_watches()

        self.call(expire())

    def compact(self) -> None:
        """Drop the watch history: watches from any older resourceVersion get 410 Gone, and open
        watches end with a 410 ERROR event, so their clients must relist."""
        self._run_sync(self._server.state.storage.compact)

    def inject(self, request: FaultRequest) -> dict[str, Any]:
        """Apply a fault request as ``POST /sandbox/faults`` would (outages run in the background);
        the faults' state afterwards."""

        async def apply() -> dict[str, Any]:
            apply_request(self._server.faults, self._server, request)
            return self._server.faults.wire(time.monotonic())

        return self.call(apply())

    def clear_faults(self) -> None:
        self._run_sync(self._server.faults.clear)

    def install_crd_file(self, path: str) -> None:
        """Create or replace the CRD(s) in a YAML file; their resources are served at once."""
        self.call(self._server.install_file(path))

    def apply_file(self, path: str) -> None:
        """Create or replace every object in a YAML file as the server itself (no admission user)."""
        self.call(self._server.install_file(path))

    def route_service(self, namespace: str, name: str, port: int, host: str = "127.0.0.1") -> None:
        """Send webhook calls for Service ``namespace/name`` to ``host:port`` (no cluster network here)."""

        def route() -> None:
            self._server.state.admission.service_routes[(namespace, name)] = ServiceRoute(host, port)

        self._run_sync(route)

    def wait_idle(self) -> None:
        """Wait until the garbage collector has nothing pending."""
        self.call(self._server.deleter.idle())


@contextlib.contextmanager
def start_apiserver(
    *,
    port: int = 0,
    watch_window: int = DEFAULT_WATCH_WINDOW,
    install_volcano_crds: bool = True,
    install_tfjob_crd: bool = True,
    tfjob_crd: str | None = None,
    authorize: bool = False,
) -> Iterator[ApiServerHandle]:
    """A fresh API server on 127.0.0.1 (``port`` 0 picks a free one) for the ``with`` block.

    The Volcano PodGroup and Queue CRDs and the chart's TFJob CRD (``tfjob_crd`` overrides its path;
    skipped when the file does not exist) are installed first unless turned off. With ``authorize``
    the server enforces the RBAC objects stored in it (the admin token is in ``system:masters``).
    """
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, name="sandbox-apiserver", daemon=True)
    thread.start()
    ready.wait()
    server = ApiServer(watch_window=watch_window, authorize=authorize)
    with tempfile.TemporaryDirectory(prefix="tfgang-sandbox-") as directory:
        try:
            asyncio.run_coroutine_threadsafe(server.start(port=port), loop).result(30)
            handle = ApiServerHandle(server, loop, directory)
            if install_volcano_crds:
                for path in VOLCANO_CRD_FILES:
                    handle.install_crd_file(path)
            if install_tfjob_crd:
                crd_path = tfjob_crd or tfjob_crd_path()
                if crd_path and os.path.exists(crd_path):
                    handle.install_crd_file(crd_path)
                else:
                    logger.info("no TFJob CRD file found; not installing it")
            yield handle
        finally:
            asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()
