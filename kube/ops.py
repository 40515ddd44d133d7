"""The plain-HTTP operations server every component runs: ``/healthz``, ``/readyz``, ``/metrics``.

Public API:

- ``Check = Callable[[], bool | Awaitable[bool]]`` -- a named probe; raising counts as failing.
- ``OpsServer(registry, *, host="0.0.0.0", port=8080, check_timeout=2.0)``
  - ``add_readiness_check(name, check)`` / ``add_liveness_check(name, check)``
  - ``async start()`` / ``async stop()``; also ``async with OpsServer(...)``.
  - ``port`` -- the bound port (useful with ``port=0``); ``url`` -- ``http://host:port``.
  - ``app`` -- the ``aiohttp.web.Application``, for tests or extra routes before ``start()``.
- Endpoints: ``GET /healthz`` and ``GET /readyz`` answer 200 ``ok`` when every check passes, else
  503 listing the failing checks (``?verbose`` lists every check); ``GET /metrics`` serves the
  registry in the Prometheus text format.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

__all__ = ["Check", "OpsServer"]

logger = logging.getLogger(__name__)

Check = Callable[[], bool | Awaitable[bool]]


class OpsServer:
    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        host: str = "0.0.0.0",
        port: int = 8080,
        check_timeout: float = 2.0,
    ) -> None:
        self._registry = registry
        self._host = host
        self._port = port
        self._check_timeout = check_timeout
        self._readiness: dict[str, Check] = {}
        self._liveness: dict[str, Check] = {}
        self._runner: web.AppRunner | None = None
        self._bound_port: int | None = None
        self.app = web.Application()
        self.app.router.add_get("/healthz", self._healthz)
        self.app.router.add_get("/livez", self._healthz)
        self.app.router.add_get("/readyz", self._readyz)
        self.app.router.add_get("/metrics", self._metrics)

    def add_readiness_check(self, name: str, check: Check) -> None:
        self._readiness[name] = check

    def add_liveness_check(self, name: str, check: Check) -> None:
        self._liveness[name] = check

    @property
    def port(self) -> int:
        if self._bound_port is None:
            raise RuntimeError("the ops server is not started")
        return self._bound_port

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self._host in ("0.0.0.0", "") else self._host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        runner = web.AppRunner(self.app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port)
        await site.start()
        self._runner = runner
        addresses = runner.addresses
        self._bound_port = int(addresses[0][1]) if addresses else self._port
        logger.info("ops server listening on %s:%s", self._host, self._bound_port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._bound_port = None

    async def __aenter__(self) -> OpsServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def _run_check(self, name: str, check: Check) -> bool:
        try:
            async with asyncio.timeout(self._check_timeout):
                result = check()
                if inspect.isawaitable(result):
                    result = await result
            return bool(result)
        except Exception:
            logger.warning("check %s failed", name, exc_info=True)
            return False

    async def _answer(self, request: web.Request, checks: dict[str, Check]) -> web.Response:
        results = {name: await self._run_check(name, check) for name, check in list(checks.items())}
        healthy = all(results.values())
        if "verbose" in request.query or not healthy:
            lines = [
                f"[{'+' if ok else '-'}]{name} {'ok' if ok else 'failed'}" for name, ok in results.items()
            ]
            lines.append("ok" if healthy else "check failed")
            text = "\n".join(lines) + "\n"
        else:
            text = "ok"
        return web.Response(status=200 if healthy else 503, text=text)

    async def _healthz(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._liveness)

    async def _readyz(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._readiness)

    async def _metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(self._registry)
        response = web.Response(body=body)
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response
