"""Serving the admission application over TLS with a context that ``CertificateReloader`` refreshes.

Each connection is an ``http11.HttpProtocol``. The server runs its own accept loop, for what
asyncio's ``create_server`` does not offer:
- a cap on concurrent connections (TLS handshakes included): at the cap the loop stops accepting,
  so further clients wait in the kernel's backlog instead of being dropped, and are served as soon
  as a slot frees (slow and idle connections are closed by the deadlines in ``connections``);
- a TLS handshake deadline (``ssl_handshake_timeout``; ``TCPSite`` leaves asyncio's 60 s);
- a ``protocol_version`` alert for TLS 1.0/1.1 clients. OpenSSL writes that alert, but asyncio's
  and uvloop's SSL protocols drop their pending output when a handshake fails, so such a client
  saw a bare close. The ClientHello's version is peeked before TLS starts and answered here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable

from webhook.app import AdmissionApp
from webhook.connections import ConnectionLimits
from webhook.http11 import HttpProtocol, Intake

logger = logging.getLogger(__name__)

_TLS_HANDSHAKE = 0x16
_CLIENT_HELLO = 0x01
_TLS_1_2 = (3, 3)
# Record type alert, then (after the record version) length 2, level fatal, protocol_version.
_ALERT_TYPE = b"\x15"
_PROTOCOL_VERSION_ALERT = b"\x00\x02\x02\x46"
# Record header (5 bytes), handshake type and length (4), then the ClientHello's version (2).
_HELLO_PREFIX = 11
LISTEN_BACKLOG = 1024


class HttpsServer:
    def __init__(
        self,
        app: AdmissionApp,
        ssl_context: ssl.SSLContext,
        *,
        host: str = "0.0.0.0",
        port: int = 9443,
        shutdown_timeout: float = 5.0,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self._app = app
        self._ssl_context = ssl_context
        self._host = host
        self._port = port
        self._shutdown_timeout = shutdown_timeout
        self._limits = limits or ConnectionLimits()
        self._protocols: set[HttpProtocol] = set()
        self._socket: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._connecting: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(self._limits.max_connections)
        self._bound_port: int | None = None

    @property
    def port(self) -> int:
        if self._bound_port is None:
            raise RuntimeError("the HTTPS server is not started")
        return self._bound_port

    async def start(self) -> None:
        self._socket = _listen(self._host, self._port)
        self._bound_port = int(self._socket.getsockname()[1])
        self._accepting = asyncio.create_task(self._accept(self._socket))
        logger.info("admission webhook listening on https://%s:%s", self._host, self._bound_port)

    async def stop(self) -> None:
        if self._accepting is not None:
            self._accepting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._accepting
            self._accepting = None
        for task in list(self._connecting):
            task.cancel()
        if self._connecting:
            await asyncio.gather(*self._connecting, return_exceptions=True)
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        # Answers being made are given the shutdown timeout to go out; then every connection closes.
        serving = [p.serving for p in self._protocols if p.serving is not None]
        if serving:
            await asyncio.wait(serving, timeout=self._shutdown_timeout)
        for protocol in list(self._protocols):
            protocol.close()
        self._bound_port = None

    async def _accept(self, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._slots.acquire()
            try:
                connection, _ = await loop.sock_accept(listening)
            except OSError as exc:
                # Out of file descriptors or the like: keep serving the connections already open.
                self._slots.release()
                logger.warning("could not accept a connection: %s", exc)
                await asyncio.sleep(0.1)
                continue
            except BaseException:
                self._slots.release()
                raise
            task = asyncio.create_task(self._connect(connection))
            self._connecting.add(task)
            task.add_done_callback(self._connecting.discard)

    async def _connect(self, connection: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        released = False

        def release() -> None:
            # Once per connection, whichever of the handshake's failure or the close comes.
            nonlocal released
            if not released:
                released = True
                self._slots.release()

        handed_over = False
        try:
            connection.setblocking(False)
            # Answers are written in pieces (head, body): without this, Nagle's algorithm holds the
            # last piece until the client's delayed ACK, ~40 ms per keep-alive request.
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if await _refused_old_tls(connection, self._limits.handshake_timeout):
                return
            await loop.connect_accepted_socket(
                lambda: self._protocol(release),
                connection,
                ssl=self._ssl_context,
                ssl_handshake_timeout=self._limits.handshake_timeout,
            )
            handed_over = True
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError) as exc:
            logger.debug("connection closed before it was served: %s", exc)
        finally:
            if not handed_over:
                connection.close()
                release()

    def _protocol(self, release: Callable[[], None]) -> HttpProtocol:
        limits = self._limits
        intake = Intake(
            idle_timeout=limits.idle_timeout,
            header_timeout=limits.header_timeout,
            body_timeout=self._app.intake.body_timeout,
            max_header_bytes=limits.max_header_bytes,
            max_headers=limits.max_headers,
            max_body_bytes=self._app.intake.max_body_bytes,
        )
        protocol: HttpProtocol

        def closed() -> None:
            self._protocols.discard(protocol)
            release()

        protocol = HttpProtocol(self._app, intake, self._app.intake.bodies, on_close=closed)
        self._protocols.add(protocol)
        return protocol


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
        # Room for the clients that wait while the connection cap is reached (the kernel caps it
        # at net.core.somaxconn); an overflowing backlog would drop their handshakes.
        listening.listen(LISTEN_BACKLOG)
        listening.setblocking(False)
    except OSError:
        listening.close()
        raise
    return listening


async def _refused_old_tls(connection: socket.socket, within: float) -> bool:
    """True when the client offered at most TLS 1.1 and was sent a protocol_version alert."""
    head = await _peek(connection, _HELLO_PREFIX, within)
    if len(head) < _HELLO_PREFIX or head[0] != _TLS_HANDSHAKE or head[5] != _CLIENT_HELLO:
        return False  # not a TLS ClientHello (or too slow): the TLS handshake deals with it
    # A TLS 1.2 or 1.3 client sets the ClientHello's legacy_version to 3.3 (RFC 8446, 4.1.2).
    if (head[9], head[10]) >= _TLS_1_2:
        return False
    logger.debug("refused a TLS %d.%d ClientHello with a protocol_version alert", head[9], head[10])
    with contextlib.suppress(OSError):
        connection.send(_ALERT_TYPE + head[1:3] + _PROTOCOL_VERSION_ALERT)
    return True


async def _peek(connection: socket.socket, size: int, within: float) -> bytes:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        try:
            head = connection.recv(size, socket.MSG_PEEK)
        except BlockingIOError:
            head = None
        if head is not None and (len(head) >= size or not head):
            return head
        remaining = deadline - loop.time()
        if remaining <= 0:
            return head or b""
        if head:
            # Part of the hello is there: the socket stays readable, so wait by the clock.
            await asyncio.sleep(min(0.05, remaining))
            continue
        readable: asyncio.Future[None] = loop.create_future()
        loop.add_reader(connection.fileno(), _set_once, readable)
        try:
            async with asyncio.timeout(remaining):
                await readable
        except TimeoutError:
            return b""
        finally:
            loop.remove_reader(connection.fileno())


def _set_once(future: asyncio.Future[None]) -> None:
    # The reader fires again until it is removed, maybe before the waiting task has run.
    if not future.done():
        future.set_result(None)
