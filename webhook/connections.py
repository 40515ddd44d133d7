"""Connection hygiene for the HTTPS server: deadlines, header sizes, quiet client errors.

What aiohttp 3.14 offers is used as is (``RequestHandler`` arguments): ``keepalive_timeout`` is the
idle limit, armed from the moment a connection opens and again after each response, and closes a
connection that has not completed a request by then; ``max_line_size``, ``max_field_size`` and
``max_headers`` bound what the header parser keeps; ``read_bufsize`` bounds the body buffer.

What it does not offer is added here, minimally:
- a header-read deadline (slowloris): aiohttp's idle timer is not reset by incoming bytes, but
  it only fires after the idle limit, which must stay longer than kube-apiserver's own idle
  timeout (90 s) so that the client, not the server, closes idle connections. A request whose
  first byte has arrived must complete its headers within ``header_timeout``;
- errors of HTTP parsing answered with a ``metav1.Status`` JSON body and one rate-limited INFO
  line, instead of a text body and an ERROR with a traceback per request.
The body deadline is in ``app`` (around the read), the connection cap and the TLS handshake
deadline in ``server`` (the accept loop).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson
from aiohttp import web_protocol, web_request, web_response, web_server
from aiohttp.http_exceptions import HttpProcessingError

from webhook.bounds import clip
from webhook.quietlog import LogBudget

logger = logging.getLogger(__name__)

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


_client_errors = LogBudget()


class GuardedRequestHandler(web_protocol.RequestHandler):
    """aiohttp's protocol with a header-read deadline and JSON answers to malformed HTTP.

    The deadline uses the same internals aiohttp's own idle timer reads (``_waiter``: the handler
    waits for the next request; ``_request_count``: requests whose headers were parsed);
    ``tests/webhook/test_webhook_connections.py`` fails if a new aiohttp changes them."""

    def __init__(
        self,
        manager: web_server.Server,
        *,
        header_timeout: float,
        on_close: Callable[[], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(manager, **kwargs)
        self._header_timeout = header_timeout
        self._on_close = on_close
        self._header_deadline: asyncio.TimerHandle | None = None
        self._headers_seen = 0

    def data_received(self, data: bytes) -> None:
        waiting = self._waiter is not None and not self._waiter.done()
        super().data_received(data)
        if self._request_count != self._headers_seen:
            self._headers_seen = self._request_count
            self._cancel_header_deadline()
        elif waiting and self._header_deadline is None:
            # A request has begun and its headers are not complete yet (a whole request in one
            # read, the usual case, never needs the timer).
            self._header_deadline = self._loop.call_later(self._header_timeout, self._headers_too_slow)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._cancel_header_deadline()
        try:
            super().connection_lost(exc)
        finally:
            on_close, self._on_close = self._on_close, None
            if on_close is not None:
                on_close()

    def _cancel_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if self._request_count != self._headers_seen or self.transport is None:
            return
        _client_errors.log(
            logger,
            logging.INFO,
            "closed a connection whose request headers took over %.0fs",
            self._header_timeout,
        )
        body = status_body(408, "Timeout", f"request headers not received within {self._header_timeout:g}s")
        self.transport.write(
            b"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        self.force_close()

    def log_exception(self, *args: Any, **kwargs: Any) -> None:
        error = kwargs.get("exc_info")
        if isinstance(error, web_protocol.RequestPayloadError | HttpProcessingError):
            # A body the client broke (bad Content-Encoding, truncated chunks) found again while
            # aiohttp drains it after the answer: the client's mistake, already answered.
            _client_errors.log(logger, logging.INFO, "unreadable request body: %s", clip(str(error), 200))
            return
        super().log_exception(*args, **kwargs)

    def handle_error(
        self,
        request: web_request.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web_response.StreamResponse:
        if status >= 500:
            return super().handle_error(request, status, exc, message)
        # A client's mistake (the parser's 400s): one short line, no traceback, and an answer
        # that says what was wrong.
        detail = clip(" ".join(str(message or exc or "").split()) or "unparsable", 200)
        text = f"malformed HTTP request: {detail}"
        _client_errors.log(logger, logging.INFO, "%s (from %s)", text, request.remote)
        response = web_response.Response(
            status=status,
            body=status_body(status, "BadRequest", text),
            content_type="application/json",
        )
        response.force_close()
        return response


class BodyBudget:
    """Bytes of request bodies being read at once, across all connections.

    A body is read whole and then decoded (several times its size in Python objects), so the
    number of large bodies in flight, not their count per connection, is what memory depends on.
    A request reserves its declared length (the body limit when it declares none) and waits, within
    its body deadline, while others hold the budget; ordinary reviews (a few KiB) barely touch it."""

    def __init__(self, total: int) -> None:
        self._total = total
        self._free = total
        self._waiting = 0
        self._released = asyncio.Condition()

    def reserve(self, size: int) -> _Reservation:
        """``async with budget.reserve(size):`` -- waits until ``size`` bytes (at most the whole
        budget) are free, holds them for the block."""
        return _Reservation(self, min(size, self._total))

    async def _take(self, size: int) -> None:
        # The usual case, on every admission: nobody waits and the budget has room. Taking it
        # needs no lock (the loop runs one task at a time); the condition is for those who wait.
        if self._free >= size and not self._waiting:
            self._free -= size
            return
        async with self._released:
            self._waiting += 1
            try:
                await self._released.wait_for(lambda: self._free >= size)
            finally:
                self._waiting -= 1
            self._free -= size

    async def _give_back(self, size: int) -> None:
        self._free += size
        if self._waiting:
            async with self._released:
                self._released.notify_all()


class _Reservation:
    """A class, not an ``asynccontextmanager``: this runs on every admission, and a generator-based
    context manager costs several times the bookkeeping itself."""

    __slots__ = ("_budget", "_size")

    def __init__(self, budget: BodyBudget, size: int) -> None:
        self._budget = budget
        self._size = size

    async def __aenter__(self) -> None:
        await self._budget._take(self._size)

    async def __aexit__(self, *exc_info: object) -> None:
        await self._budget._give_back(self._size)
