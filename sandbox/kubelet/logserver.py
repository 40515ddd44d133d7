"""The node agent's plain-HTTP endpoint for `kubectl logs`: ``GET /containerLogs/<ns>/<pod>/<c>``.

The API server's ``pods/log`` subresource proxies here (the node's ``kubeletEndpoint`` port).
Query parameters as the kubelet takes them: ``follow``, ``tailLines``, ``previous``, ``limitBytes``.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path

from aiohttp import web

from sandbox.kubelet.logstore import LogNotFound, LogStore, tail

logger = logging.getLogger(__name__)

FOLLOW_POLL_SECONDS = 0.1
_TRUE = frozenset({"true", "1", "yes"})


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in _TRUE


def _optional_int(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError as error:
        raise web.HTTPBadRequest(text=f"{name} must be an integer, not {raw!r}") from error
    if value < 0:
        raise web.HTTPBadRequest(text=f"{name} must not be negative")
    return value


class LogServer:
    def __init__(self, store: LogStore, host: str = "127.0.0.1", port: int = 0) -> None:
        self._store = store
        self._host = host
        self._port = port
        self._runner: web.AppRunner | None = None
        self.port = port

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._logs)
        app.router.add_get("/healthz", self._healthz)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, self._port))
        self.port = int(sock.getsockname()[1])
        await web.SockSite(self._runner, sock).start()
        logger.info("serving container logs on http://%s:%d", self._host, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        namespace = request.match_info["namespace"]
        pod = request.match_info["pod"]
        container = request.match_info["container"]
        tail_lines = _optional_int(request, "tailLines")
        limit = _optional_int(request, "limitBytes")
        previous = _flag(request, "previous")
        try:
            source = self._store.locate(namespace, pod, container, previous=previous)
        except LogNotFound as error:
            raise web.HTTPBadRequest(text=str(error)) from error
        raw = await asyncio.to_thread(_read_from, source.path, 0)
        data = tail(raw, tail_lines)
        if limit is not None:
            data = data[:limit]
        if not _flag(request, "follow") or previous:
            return web.Response(body=data, content_type="text/plain")
        return await self._follow(request, (namespace, pod, container), source.path, data, len(raw))

    async def _follow(
        self, request: web.Request, key: tuple[str, str, str], path: Path, first: bytes, offset: int
    ) -> web.StreamResponse:
        namespace, pod, container = key
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        await response.write(first)
        while True:
            live = self._store.is_live(namespace, pod, container, path)
            chunk = await asyncio.to_thread(_read_from, path, offset)
            if chunk:
                offset += len(chunk)
                await response.write(chunk)
            elif not live:
                break
            else:
                await asyncio.sleep(FOLLOW_POLL_SECONDS)
        await response.write_eof()
        return response


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read()
    except FileNotFoundError:
        return b""
