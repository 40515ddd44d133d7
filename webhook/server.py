"""Serving the admission application over TLS with a context that ``CertificateReloader`` refreshes.

HTTP is aiohttp's: its low-level ``web.Server`` (no router, middlewares or signals: two paths need
none of them) parses each connection with llhttp and hands the request to ``AdmissionApp.handle``.
Its parser refuses malformed HTTP -- over-long lines and fields, too many fields, a Content-Length
that is not a number, bare CR, LF or NUL in a header, no Host on HTTP/1.1 -- with 400 and a
close; ``_StatusErrors`` words that 400 as a ``metav1.Status``. Around each connection's protocol
``connections.HeaderDeadline`` adds the header deadline aiohttp lacks.

The server runs its own accept loop (``loop.sock_accept`` and ``connect_accepted_socket``), for
what asyncio's ``create_server`` does not offer:
- a cap on concurrent connections (TLS handshakes included). At the cap, a client that arrives has
  a connection between requests closed for it: the one that has been sending a request's head
  the longest, else the oldest that never sent a request, else the oldest idle one (nginx reuses
  its idle connections the same way). Slow and idle clients cannot hold the slots while others
  wait, the clients in use (kube-apiserver's kept-alive connections) are closed last, and no
  answer is cut. When every
  connection is in the middle of a request, or of its TLS handshake, further clients wait in the
  kernel's backlog, and are served as soon as a slot frees (the deadlines bound each wait);
- a TLS handshake deadline (``ssl_handshake_timeout``; ``TCPSite`` leaves asyncio's 60 s);
- a ``protocol_version`` alert for TLS 1.0/1.1 clients. OpenSSL writes that alert, but asyncio's
  and uvloop's SSL protocols drop their pending output when a handshake fails, so such a client
  saw a bare close. The ClientHello's version is peeked before TLS starts and answered here.

Shutting down loses no request: ``drain`` (at SIGTERM) makes every answer carry ``Connection:
close`` while the listener keeps accepting; ``stop`` (after the shutdown delay) stops accepting,
closes the connections left idle (``HeaderDeadline.idle``), and waits for the requests begun.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import logging
import socket
import ssl
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import StreamReader

from webhook.app import AdmissionApp
from webhook.bounds import clip
from webhook.connections import ConnectionLimits, HeaderDeadline, status_body
from webhook.quietlog import LogBudget

logger = logging.getLogger(__name__)
_client_errors = LogBudget()

_TLS_HANDSHAKE = 0x16
_CLIENT_HELLO = 0x01
_TLS_1_2 = (3, 3)
# Record type alert, then (after the record version) length 2, level fatal, protocol_version.
_ALERT_TYPE = b"\x15"
_PROTOCOL_VERSION_ALERT = b"\x00\x02\x02\x46"
# Record header (5 bytes), handshake type and length (4), then the ClientHello's version (2).
_HELLO_PREFIX = 11
LISTEN_BACKLOG = 1024
# At the cap with every connection in a request or a TLS handshake, how often a waiting client's
# accept looks again for one between requests (a burst's handshakes end within milliseconds).
_MAKE_ROOM_RETRY = 0.05
# While stopping, how often the connections still open are looked at for one left idle.
_DRAIN_POLL = 0.02


class _StatusErrors(web.RequestHandler):
    """aiohttp's protocol for one connection, wording what it refuses itself as a ``metav1.Status``
    (its own answer is plain text, and logged at ERROR with a traceback: anyone can send many)."""

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        detail = clip(message or str(exc) or type(exc).__name__, 200)
        if status >= 500:
            # Only a defect of ours gets here (AdmissionApp.handle answers everything): never a 5xx.
            logger.error("could not answer a request: %s", detail, exc_info=exc)
            status, text = 400, f"could not process the request: {detail}"
        else:
            text = f"malformed HTTP request: {detail}"
            _client_errors.log(logger, logging.INFO, "%s", text)
        reason = http.HTTPStatus(status).phrase.replace(" ", "")
        response = web.Response(
            status=status, body=status_body(status, reason, text), content_type="application/json"
        )
        response.force_close()
        return response


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
        self._connections: dict[asyncio.BaseTransport, HeaderDeadline] = {}
        self._http: web.Server | None = None
        self._handler_options: dict[str, Any] = {}
        self._socket: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._connecting: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(self._limits.max_connections)
        self._bound_port: int | None = None
        self._draining = False

    @property
    def port(self) -> int:
        if self._bound_port is None:
            raise RuntimeError("the HTTPS server is not started")
        return self._bound_port

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        limits = self._limits
        max_body_bytes = self._app.intake.max_body_bytes

        def make_request(
            message: RawRequestMessage,
            payload: StreamReader,
            protocol: web.RequestHandler,
            writer: AbstractStreamWriter,
            task: asyncio.Task[None],
        ) -> web.BaseRequest:
            return web.BaseRequest(
                message, payload, protocol, writer, task, loop, client_max_size=max_body_bytes
            )

        self._handler_options = {
            "keepalive_timeout": limits.idle_timeout,
            "max_line_size": limits.max_header_bytes,
            "max_field_size": limits.max_header_bytes,
            "max_headers": limits.max_headers,
            "access_log": None,  # each review is logged by the app, with its uid
            # A body refused unread (413, 408, undecodable) is not drained: the connection closes.
            "lingering_time": 0,
        }
        self._http = web.Server(self._handle, request_factory=make_request, **self._handler_options)
        self._socket = _listen(self._host, self._port)
        self._bound_port = int(self._socket.getsockname()[1])
        self._accepting = asyncio.create_task(self._accept(self._socket))
        logger.info("admission webhook listening on https://%s:%s", self._host, self._bound_port)

    def drain(self) -> None:
        """Shutting down: from now on every answer carries ``Connection: close`` (on connections open
        now and on those accepted later), so each client's next request opens a connection to
        another replica. The listener keeps accepting."""
        self._draining = True
        for connection in self._connections.values():
            connection.drain()

    def close_idle_connections(self) -> int:
        """Close the connections with no request under way (``HeaderDeadline.idle``); how many."""
        return sum(connection.close_if_idle() for connection in list(self._connections.values()))

    async def stop(self) -> None:
        """Stop accepting, finish every request already begun, then close what is left.

        Each open connection answers the request it has under way (``Connection: close``) and is
        closed as soon as it has none; a request whose first bytes have arrived is read and
        answered. What is still open after the shutdown timeout is closed by aiohttp's shutdown."""
        if self._accepting is not None:
            self._accepting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._accepting
            self._accepting = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        self.drain()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._shutdown_timeout
        # A client in its TLS handshake has sent or is sending a request: let it be served.
        if self._connecting:
            await asyncio.wait(set(self._connecting), timeout=self._shutdown_timeout)
        for task in list(self._connecting):
            task.cancel()
        if self._connecting:
            await asyncio.gather(*self._connecting, return_exceptions=True)
        while self._connections and loop.time() < deadline:
            self.close_idle_connections()
            await asyncio.sleep(_DRAIN_POLL)
        # What did not finish within the shutdown timeout: aiohttp gives its answers the same
        # time again to go out; then every connection closes.
        if self._http is not None:
            await self._http.shutdown(self._shutdown_timeout)
        for connection in list(self._connections.values()):
            if connection.transport is not None:
                connection.transport.abort()
        self._bound_port = None

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        return await self._app.handle(request, self._connections.get(request.transport))  # type: ignore[arg-type]

    async def _accept(self, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                connection, _ = await loop.sock_accept(listening)
            except OSError as exc:
                # Out of file descriptors or the like: keep serving the connections already open.
                logger.warning("could not accept a connection: %s", exc)
                await asyncio.sleep(0.1)
                continue
            try:
                await self._take_slot()
            except BaseException:
                connection.close()
                raise
            task = asyncio.create_task(self._connect(connection))
            self._connecting.add(task)
            task.add_done_callback(self._connecting.discard)

    async def _take_slot(self) -> None:
        """A slot for a client that waits: at the cap, one connection between requests is closed
        for it; while there is none (all in a request or a TLS handshake), look again shortly."""
        while self._slots.locked():
            if self._make_room():
                break  # its slot frees as it closes
            await asyncio.sleep(_MAKE_ROOM_RETRY)
        await self._slots.acquire()

    def _make_room(self) -> bool:
        """Close, of the connections between requests, the one sending a request's head the
        longest, else the oldest that never sent a request, else the oldest idle one (the clients
        in use are kept longest); False when every connection is in a request."""

        def rank(numbered: tuple[int, HeaderDeadline]) -> tuple[int, float]:
            age, connection = numbered
            head = connection.head_deadline
            if head is not None:
                return 0, head
            return (2 if connection.served else 1), age

        waiting = [connection for connection in self._connections.values() if connection.between_requests]
        if not waiting:
            return False
        min(enumerate(waiting), key=rank)[1].make_room()  # in the order they opened
        return True

    async def _connect(self, connection: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        handed_over = False
        try:
            connection.setblocking(False)
            # Answers are written in pieces (head, body): without this, Nagle's algorithm holds the
            # last piece until the client's delayed ACK, ~40 ms per keep-alive request.
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if await _refused_old_tls(connection, self._limits.handshake_timeout):
                return
            await loop.connect_accepted_socket(
                self._protocol,
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
                self._slots.release()

    def _protocol(self) -> HeaderDeadline:
        assert self._http is not None
        handler = _StatusErrors(self._http, loop=asyncio.get_running_loop(), **self._handler_options)
        connection = HeaderDeadline(
            handler, self._limits.header_timeout, on_open=self._opened, on_close=self._closed
        )
        if self._draining:
            connection.drain()
        return connection

    def _opened(self, connection: HeaderDeadline) -> None:
        if connection.transport is not None:
            self._connections[connection.transport] = connection

    def _closed(self, connection: HeaderDeadline) -> None:
        if connection.transport is not None:
            self._connections.pop(connection.transport, None)
        self._slots.release()


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
