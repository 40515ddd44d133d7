"""Serving an aiohttp application over TLS with a context that ``CertificateReloader`` refreshes."""

from __future__ import annotations

import logging
import ssl

from aiohttp import web

logger = logging.getLogger(__name__)


class HttpsServer:
    def __init__(
        self,
        app: web.Application,
        ssl_context: ssl.SSLContext,
        *,
        host: str = "0.0.0.0",
        port: int = 9443,
        shutdown_timeout: float = 5.0,
    ) -> None:
        self._app = app
        self._ssl_context = ssl_context
        self._host = host
        self._port = port
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.AppRunner | None = None
        self._bound_port: int | None = None

    @property
    def port(self) -> int:
        if self._bound_port is None:
            raise RuntimeError("the HTTPS server is not started")
        return self._bound_port

    async def start(self) -> None:
        # No access log: it would cost more than the admission itself; decisions are logged instead.
        runner = web.AppRunner(
            self._app, access_log=None, handle_signals=False, shutdown_timeout=self._shutdown_timeout
        )
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port, ssl_context=self._ssl_context)
        await site.start()
        self._runner = runner
        addresses = runner.addresses
        self._bound_port = int(addresses[0][1]) if addresses else self._port
        logger.info("admission webhook listening on https://%s:%s", self._host, self._bound_port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._bound_port = None
