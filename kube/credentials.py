"""The ``Authorization`` header of each request, kept current: fixed, from a file, or from an exec plugin.

Public API:

- ``Credentials`` -- protocol: ``async authorization() -> str | None`` (the header's value) and
  ``rejected()`` (the server answered 401: fetch anew before the next request).
- ``credentials_for(endpoint) -> Credentials`` -- the kubeconfig's choice, client-go's order:
  ``token``, else ``tokenFile``, else ``exec``, else basic auth, else none (client certificates
  are part of TLS, not of this).

A token file (the projected service-account token, which the kubelet rotates) is read again once a
minute, client-go's period; if it cannot be read the token already held is kept. An exec plugin's
token is kept until its ``expirationTimestamp`` (or a 401), then the plugin runs again.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import time
from typing import Any, Final, Protocol

import orjson

from kube.errors import ConfigError, ConnectionFailed
from kube.kubeconfig import Endpoint, ExecPlugin
from kubeobjects.times import parse_time

__all__ = ["Credentials", "credentials_for"]

logger = logging.getLogger(__name__)

TOKEN_FILE_PERIOD: Final = 60.0
EXEC_TIMEOUT: Final = 60.0
# A token that expires within this margin is fetched anew before it is sent.
EXPIRY_MARGIN: Final = 10.0


class Credentials(Protocol):
    async def authorization(self) -> str | None: ...

    def rejected(self) -> None: ...


class _Fixed:
    def __init__(self, header: str | None) -> None:
        self._header = header

    async def authorization(self) -> str | None:
        return self._header

    def rejected(self) -> None:
        pass


class _TokenFile:
    def __init__(self, path: str) -> None:
        self._path = path
        self._header: str | None = None
        self._read_at = -TOKEN_FILE_PERIOD

    async def authorization(self) -> str | None:
        if time.monotonic() - self._read_at >= TOKEN_FILE_PERIOD:
            self._read()
        return self._header

    def rejected(self) -> None:
        self._read_at = -TOKEN_FILE_PERIOD

    def _read(self) -> None:
        # A few hundred bytes from a local (tmpfs) file once a minute: not worth a thread hand-off.
        self._read_at = time.monotonic()
        try:
            with open(self._path, encoding="utf-8") as handle:
                token = handle.read().strip()
        except OSError as exc:
            logger.warning("cannot read the token file %s, keeping the token held: %s", self._path, exc)
            return
        if token:
            self._header = f"Bearer {token}"


class _Exec:
    def __init__(self, plugin: ExecPlugin, server: str) -> None:
        self._plugin = plugin
        self._server = server
        self._header: str | None = None
        self._expires: float | None = None  # time.time(); None: until rejected
        self._lock = asyncio.Lock()

    async def authorization(self) -> str | None:
        if self._fresh():
            return self._header
        async with self._lock:  # one plugin run for all the requests that found the token stale
            if not self._fresh():
                self._header, self._expires = await self._run()
        return self._header

    def rejected(self) -> None:
        self._header = None

    def _fresh(self) -> bool:
        return self._header is not None and (
            self._expires is None or self._expires - EXPIRY_MARGIN > time.time()
        )

    async def _run(self) -> tuple[str, float | None]:
        plugin = self._plugin
        command = plugin.command
        if os.sep in command and not os.path.isabs(command):
            command = os.path.join(plugin.base_dir, command)
        info = {"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
        env = {**os.environ, **dict(plugin.env), "KUBERNETES_EXEC_INFO": orjson.dumps(info).decode()}
        try:
            process = await asyncio.create_subprocess_exec(
                command, *plugin.args, env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            hint = f" ({plugin.install_hint.strip()})" if plugin.install_hint else ""
            message = f"cannot run the exec plugin {command!r}: {exc.strerror or exc}{hint}"
            raise _unavailable(message) from exc
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), EXEC_TIMEOUT)
        except TimeoutError:
            process.kill()
            await process.wait()
            message = f"the exec plugin {command!r} did not answer within {EXEC_TIMEOUT:g}s"
            raise _unavailable(message) from None
        if process.returncode != 0:
            detail = stderr.decode(errors="replace").strip()[-300:]
            raise _unavailable(f"the exec plugin {command!r} exited with {process.returncode}: {detail}")
        return _parse_exec_credential(stdout, command)


def _parse_exec_credential(stdout: bytes, command: str) -> tuple[str, float | None]:
    try:
        document: Any = orjson.loads(stdout)
    except ValueError as exc:
        raise _unavailable(f"the exec plugin {command!r} printed no JSON: {exc}") from exc
    status = document.get("status") if isinstance(document, dict) else None
    if not isinstance(status, dict):
        status = {}
    token = status.get("token")
    if not isinstance(token, str) or not token:
        raise _unavailable(
            f"the exec plugin {command!r} returned no status.token (client certificates from exec "
            "plugins are not supported)"
        )
    expires: float | None = None
    stamp = status.get("expirationTimestamp")
    if isinstance(stamp, str) and stamp:
        parsed = parse_time(stamp)
        if parsed is None:
            raise _unavailable(f"the exec plugin {command!r} returned a bad expirationTimestamp {stamp!r}")
        expires = parsed.timestamp()
    return f"Bearer {token}", expires


def _unavailable(message: str) -> ConnectionFailed:
    # No HTTP answer was had; a later attempt may succeed (the plugin's backend may be back).
    return ConnectionFailed(0, "CredentialsUnavailable", message)


def credentials_for(endpoint: Endpoint) -> Credentials:
    if endpoint.token:
        return _Fixed(f"Bearer {endpoint.token}")
    if endpoint.token_file:
        if not os.path.isfile(endpoint.token_file):
            raise ConfigError(f"tokenFile {endpoint.token_file!r} does not exist")
        return _TokenFile(endpoint.token_file)
    if endpoint.exec_plugin is not None:
        return _Exec(endpoint.exec_plugin, endpoint.server)
    if endpoint.basic_auth is not None:
        user, password = endpoint.basic_auth
        return _Fixed("Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    return _Fixed(None)
