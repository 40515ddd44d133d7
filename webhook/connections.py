"""The bounds on what a caller can hold of the webhook: connection limits, the body budget, the
header deadline, and the ``metav1.Status`` body every refusal carries.

``ConnectionLimits`` are the flags' values: the idle limit (kept above kube-apiserver's own 90 s,
so that the client, not the server, closes idle connections), the header, body and TLS handshake
deadlines, the connection cap and the header sizes. aiohttp enforces the idle limit
(``keepalive_timeout``) and the header sizes (its parser's ``max_line_size``, ``max_field_size``,
``max_headers``); ``server`` the cap and the handshake deadline (its accept loop); ``app`` the body
deadline, size and budget. aiohttp has no deadline on reading a request's headers, so
``HeaderDeadline`` wraps each connection's protocol and adds one, as Apache's mod_reqtimeout does.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, cast

import orjson

from webhook.quietlog import LogBudget

logger = logging.getLogger(__name__)
_client_errors = LogBudget()

# kube-apiserver's webhook client closes its idle connections after 90 s; closing them later
# than that means the server never closes one the client is about to reuse.
DEFAULT_IDLE_TIMEOUT: Final = 120.0
DEFAULT_HEADER_TIMEOUT: Final = 10.0
DEFAULT_BODY_TIMEOUT: Final = 10.0
DEFAULT_HANDSHAKE_TIMEOUT: Final = 10.0
# Each TLS connection holds a 256 KiB read buffer in asyncio's and uvloop's SSL protocol: 200 of
# them are 50 MiB, within the chart's memory limit next to the process's ~100 MiB.
DEFAULT_MAX_CONNECTIONS: Final = 200
DEFAULT_MAX_HEADER_BYTES: Final = 8190
DEFAULT_MAX_HEADERS: Final = 64
# Bodies being read at once: four of the largest (4 MiB), or thousands of ordinary reviews.
DEFAULT_MAX_INFLIGHT_BODY_BYTES: Final = 16 * 1024 * 1024


@dataclass(frozen=True)
class ConnectionLimits:
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    # One header line (request line or field) at most this long; at most max_headers fields.
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    max_headers: int = DEFAULT_MAX_HEADERS
    max_inflight_body_bytes: int = DEFAULT_MAX_INFLIGHT_BODY_BYTES


def status_body(code: int, reason: str, message: str) -> bytes:
    """A ``metav1.Status`` failure, the shape kube-apiserver prints for a webhook's HTTP error."""
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    )


class BodyBudget:
    """Bytes of request bodies being read at once, across all connections.

    A body is read whole and then decoded (several times its size in Python objects), so the
    number of large bodies in flight, not their count per connection, is what memory depends on.
    A request takes its declared length (at most the whole budget) and waits, within its body
    deadline, while others hold the budget; ordinary reviews (a few KiB) never touch it."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._free = total
        self._waiting: list[tuple[int, asyncio.Future[None]]] = []

    async def take(self, size: int) -> int:
        """Wait until ``size`` bytes (at most the whole budget) are free and hold them; returns
        what is held, for ``give_back``."""
        size = min(size, self.total)
        if self._free >= size:
            self._free -= size
            return size
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (size, waiter)
        self._waiting.append(entry)
        try:
            await waiter
        except asyncio.CancelledError:
            if entry in self._waiting:
                self._waiting.remove(entry)
            elif waiter.done() and not waiter.cancelled():
                self.give_back(size)  # granted in the same turn as the cancellation
            raise
        return size

    def give_back(self, size: int) -> None:
        self._free += size
        for entry in list(self._waiting):
            wanted, waiter = entry
            if wanted <= self._free:
                self._free -= wanted
                self._waiting.remove(entry)
                waiter.set_result(None)


class HeaderDeadline(asyncio.Protocol):
    """The HTTP protocol of one connection (aiohttp's ``RequestHandler``), with a header deadline.

    A request's headers must be complete ``header_timeout`` after its first byte, else the client
    gets a 408 and the connection is closed: slow-header clients (slowloris) cannot hold
    connections. The clock starts with the first byte that arrives while no request is being
    read -- on a fresh connection, or after the previous request's body was read whole -- and
    stops when aiohttp hands the parsed request to the handler (``head_complete``). The handler
    reports the body read (``body_read``) and the answer made (``answered``); a deadline that
    passes while an earlier answer is still being made closes the connection after that answer.

    At the connection cap, a client waiting for a slot has one connection between requests closed
    for it (``make_room``; the server picks which): a client cannot hold the slots by sending
    nothing or sending slowly, and nobody's answer is cut.

    A client that stops taking its answers (the transport pauses writing) must take them again
    within the same deadline, else the connection is aborted: otherwise a closing connection's
    last answer would hold it open for as long as the client wishes.

    While the webhook shuts down (``drain``), every answer carries ``Connection: close``, so the
    client takes its next request to a live replica; a connection with no request under way is
    closed by ``close_if_idle``, never one whose request has begun to arrive.

    Everything goes through public API: the wrapped protocol sees every callback unchanged.
    """

    def __init__(
        self,
        protocol: asyncio.Protocol,
        header_timeout: float,
        *,
        on_open: Callable[[HeaderDeadline], None] | None = None,
        on_close: Callable[[HeaderDeadline], None] | None = None,
    ) -> None:
        self._protocol = protocol
        self._timeout = header_timeout
        self._on_open = on_open
        self._on_close = on_close
        self._loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self._awaiting_head = True  # the next byte begins a request
        self._answering = False
        self._expired = False
        self._served = False  # a request's head has been read here
        self._draining = False  # shutting down: every answer closes the connection
        self._closing = False  # an answer said Connection: close; aiohttp closes after writing it
        self._deadline: float | None = None  # loop time by which the head must be complete
        self._timer: asyncio.TimerHandle | None = None
        self._stalled: asyncio.TimerHandle | None = None

    # -- the handler's reports ---------------------------------------------------------------------

    def head_complete(self) -> None:
        self._awaiting_head = False
        self._answering = True
        self._served = True
        # The timer is left to fire and find no deadline: a handle made and cancelled per request
        # would cost more than the rest of the guard together.
        self._deadline = None

    def body_read(self) -> None:
        self._awaiting_head = True

    def answered(self) -> bool:
        """The answer is made; True when the connection must close after it (a deadline passed,
        or the webhook is shutting down)."""
        self._answering = False
        self._awaiting_head = True
        self._closing = self._expired or self._draining
        return self._closing

    # -- making room at the connection cap ---------------------------------------------------------

    @property
    def between_requests(self) -> bool:
        """No request is past its head here (being read or answered): closing loses no answer."""
        return not self._answering and self.transport is not None and not self.transport.is_closing()

    @property
    def head_deadline(self) -> float | None:
        """Loop time by which the request head begun here must be complete; None before its first byte."""
        return self._deadline

    @property
    def served(self) -> bool:
        """A request was read on this connection (a client in use, not one that only connected)."""
        return self._served

    def make_room(self) -> None:
        """Close this connection, between requests, for a client waiting at the connection cap."""
        if self.transport is not None:
            _client_errors.log(
                logger,
                logging.INFO,
                "closed a connection %s to make room for a waiting client",
                "idle between requests" if self._deadline is None else "still sending a request's headers",
            )
            # At once (no TLS close_notify exchange to wait for): the slot is what is wanted.
            self.transport.abort()

    # -- shutting down -------------------------------------------------------------------------------

    def drain(self) -> None:
        """From now on every answer here carries ``Connection: close``."""
        self._draining = True

    @property
    def idle(self) -> bool:
        """Between requests with no byte of the next one arrived -- not even into the socket's
        buffer -- and no answer on its way out: closing it now loses nothing the client sent."""
        transport = self.transport
        if transport is None or transport.is_closing() or self._answering or self._closing:
            return False
        if self._deadline is not None:  # a request's head is arriving
            return False
        return not _bytes_waiting(transport)

    def close_if_idle(self) -> bool:
        """Close the connection if it is ``idle``; True when it was.

        Closed cleanly (TLS close_notify, then FIN): a kept-alive client sees its idle connection
        end and takes a new one for its next request. A request it wrote a moment before cannot
        be told apart from one that never came; this is why the webhook first answers with
        ``Connection: close`` for a while and closes idle connections only once its address has
        left the Service (see ``webhook.__main__.serve``)."""
        if not self.idle:
            return False
        assert self.transport is not None
        self.transport.close()
        return True

    # -- asyncio callbacks, passed on ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TLS transport has a Transport's methods without deriving from it.
        self.transport = cast(asyncio.Transport, transport)
        if self._on_open is not None:
            self._on_open(self)
        self._protocol.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._awaiting_head and self._deadline is None and data:
            self._deadline = deadline = self._loop.time() + self._timeout
            if self._timer is None:
                self._timer = self._loop.call_at(deadline, self._head_too_slow)
        self._protocol.data_received(data)

    def eof_received(self) -> bool | None:
        return self._protocol.eof_received()

    def pause_writing(self) -> None:
        if self._stalled is None:
            self._stalled = self._loop.call_later(self._timeout, self._abort)
        self._protocol.pause_writing()

    def resume_writing(self) -> None:
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None
        self._protocol.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._timer, self._stalled):
            if timer is not None:
                timer.cancel()
        self._timer = self._stalled = None
        try:
            self._protocol.connection_lost(exc)
        finally:
            # Only a connection that was made is reported closed (a failed TLS handshake is not).
            on_close, self._on_close = self._on_close, None
            if on_close is not None and self.transport is not None:
                on_close(self)
            self.transport = None

    # -- deadlines ---------------------------------------------------------------------------------

    def _head_too_slow(self) -> None:
        self._timer = None
        deadline = self._deadline
        transport = self.transport
        if deadline is None or transport is None or transport.is_closing():
            return
        if self._loop.time() < deadline:  # set by a later request than the one that armed it
            self._timer = self._loop.call_at(deadline, self._head_too_slow)
            return
        self._deadline = None
        if self._answering:
            self._expired = True  # the answer being made goes out first, then the connection closes
            return
        _client_errors.log(
            logger, logging.INFO, "closed a connection whose request headers took over %gs", self._timeout
        )
        body = status_body(408, "Timeout", f"request headers not received within {self._timeout:g}s")
        # No request is being answered, so nothing else writes on this connection.
        transport.write(
            b"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
            + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
            + body
        )
        transport.close()

    def _abort(self) -> None:
        self._stalled = None
        if self.transport is not None:
            logger.debug("aborted a connection whose client took no answer for %gs", self._timeout)
            self.transport.abort()


def _bytes_waiting(transport: asyncio.BaseTransport) -> bool:
    """Whether the kernel holds bytes the client sent that the event loop has not read yet."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return False
    try:
        # asyncio's and uvloop's socket stand-ins offer no recv: peek through a duplicate.
        with socket.fromfd(sock.fileno(), socket.AF_INET, socket.SOCK_STREAM) as duplicate:
            return bool(duplicate.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except BlockingIOError:
        return False
    except OSError:
        return False  # already gone: nothing of it can be lost by closing
