"""The HTTP/1.1 the admission endpoints need, on an asyncio ``Protocol``: POST with Content-Length.

Why not aiohttp's server: per admission its request machinery cost twice the decision itself, and
the deadlines it lacks had to be grafted on through its private attributes. What kube-apiserver's
webhook client sends is small and regular -- a POST, a Content-Length, keep-alive -- so this serves
exactly that, with every bound as plain state of the connection:

- keep-alive and pipelined requests, answered in order; ``Connection: close`` and HTTP/1.0
  without keep-alive close after the answer; ``Expect: 100-continue`` is answered before the body;
  a client that does not read its answers is not read from (``pause_writing``), and one that does
  not take its last answer is cut off ``header_timeout`` after the close;
- a connection without a request for ``idle_timeout`` is closed (armed when it opens and after
  each answer); a request whose first byte came must complete its headers within
  ``header_timeout`` and its body within ``body_timeout`` (else 408 and close);
- a header line over ``max_header_bytes``, more than ``max_headers`` fields, or a header block
  over ``HEAD_LINES`` lines' worth: 400; a request line or header the grammar refuses: 400;
  ``Transfer-Encoding`` (chunked): 411, send a Content-Length; a declared body over
  ``max_body_bytes``: 413 before a byte of it is read;
- a body over ``SMALL_BODY`` takes its size from the shared ``BodyBudget`` before it is read
  (reading pauses meanwhile, within the body deadline);
- ``Content-Encoding`` gzip or deflate is decoded with the body limit applied to what it inflates to;
- every refusal is a ``metav1.Status`` JSON body and at most one rate-limited INFO line.

Public API: ``Request``, ``Reply``, ``Intake``, ``Responder`` (what answers requests),
``HttpProtocol(responder, intake, budget, *, on_close=None)``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol, cast

from webhook.bounds import clip
from webhook.connections import BodyBudget, status_body
from webhook.quietlog import LogBudget

logger = logging.getLogger(__name__)

# Bodies this small are read without a budget reservation: kube-apiserver's reviews are a few KiB.
SMALL_BODY: Final = 64 * 1024
# The whole header block: this many maximal lines at most (max_headers bounds the field count).
HEAD_LINES: Final = 8
JSON: Final = b"application/json"
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_REASONS: Final = {
    100: "Continue", 200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
    408: "Request Timeout", 411: "Length Required", 413: "Request Entity Too Large",
    415: "Unsupported Media Type", 500: "Internal Server Error",
}  # fmt: skip
_client_errors = LogBudget()


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # without the query string
    headers: Mapping[str, str]  # names lower-cased
    body: bytes

    @property
    def content_type(self) -> str:
        """The media type without parameters, lower-cased; ``""`` when there is none."""
        value = self.headers.get("content-type", "")
        if value == "application/json":  # what every caller sends: no parsing
            return value
        return value.partition(";")[0].strip().lower()


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    close: bool = False
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Intake:
    idle_timeout: float
    header_timeout: float
    body_timeout: float
    max_header_bytes: int
    max_headers: int
    max_body_bytes: int


class Responder(Protocol):
    async def respond(self, request: Request) -> Reply: ...

    def refused(self, path: str, result: str) -> None:
        """A request to ``path`` was answered by the protocol itself (``result``: too_large, timeout,
        bad_request), so that the responder can count it."""


@dataclass
class _Pending:
    """A request whose headers are parsed and whose body is still being received."""

    method: str
    path: str
    headers: dict[str, str]
    length: int
    keep_alive: bool
    reserved: int = 0
    arrived: asyncio.Future[None] | None = field(default=None, repr=False)


class _Refusal(Exception):
    def __init__(self, status: int, reason: str, message: str, result: str = "bad_request") -> None:
        super().__init__(message)
        self.reply = Reply(status, status_body(status, reason, message), close=True)
        self.result = result


class HttpProtocol(asyncio.Protocol):
    def __init__(
        self,
        responder: Responder,
        intake: Intake,
        budget: BodyBudget,
        *,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._responder = responder
        self._intake = intake
        self._budget = budget
        self._on_close = on_close
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._max_head = intake.max_header_bytes * HEAD_LINES
        self._pending: _Pending | None = None
        self._serving: asyncio.Task[None] | None = None
        # One deadline at a time: when it falls (loop time) and what it calls; the timer handle
        # may be set for earlier, and then moves the deadline's check on (see _arm).
        self._timer: asyncio.TimerHandle | None = None
        self._timer_kind: Callable[[], None] | None = None
        self._deadline = 0.0
        self._writing_paused = False

    @property
    def serving(self) -> asyncio.Task[None] | None:
        """The answer being made (or the body being received) on this connection."""
        return self._serving

    def close(self) -> None:
        if self._serving is not None:
            self._serving.cancel()
        if self._transport is not None:
            self._transport.close()

    # -- asyncio callbacks -----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TLS transport has a Transport's methods without deriving from it.
        self._transport = cast(asyncio.Transport, transport)
        self._arm(self._intake.idle_timeout, self._idle)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        pending = self._pending
        if pending is not None:  # a body being received
            arrived = pending.arrived
            if arrived is not None and len(self._buffer) >= pending.length and not arrived.done():
                arrived.set_result(None)
        elif self._serving is not None or self._writing_paused:
            # An answer is being made (or the client has not taken the last ones); a pipelined
            # request waits in the buffer. Bounded: past one header block's worth, stop reading
            # until the answer is out.
            if len(self._buffer) > self._max_head and self._transport is not None:
                self._transport.pause_reading()
        else:
            self._next_request()

    def pause_writing(self) -> None:
        # The client does not read its answers: read no more requests until it has (pipelined
        # requests would otherwise pile answers up in the transport without bound).
        self._writing_paused = True
        if self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        if self._transport is not None:
            self._transport.resume_reading()
            if self._serving is None and self._pending is None:
                self._next_request()

    def eof_received(self) -> bool | None:
        return False  # close: a request cut short is not answered

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._transport = None
        pending, self._pending = self._pending, None
        if pending is not None and pending.arrived is not None and not pending.arrived.done():
            pending.arrived.cancel()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()

    # -- requests --------------------------------------------------------------------------------

    def _next_request(self) -> None:
        """Parse the head of the request at the start of the buffer, if it is all there."""
        buffer = self._buffer
        if not buffer:
            return
        end = buffer.find(b"\r\n\r\n", 0, self._max_head + 4)
        if end < 0:
            if len(buffer) > self._max_head or _line_too_long(buffer, self._intake.max_header_bytes):
                self._disarm()
                limit = self._intake.max_header_bytes
                self._refuse(_malformed(f"a header line is over {limit} bytes"), None)
            elif self._timer_kind != self._headers_too_slow:
                # A request has begun and its headers are not complete yet (a whole request in one
                # read, the usual case, never needs the timer).
                self._arm(self._intake.header_timeout, self._headers_too_slow)
            return
        self._disarm()
        head = bytes(buffer[:end])
        del buffer[: end + 4]
        try:
            pending = self._parse_head(head)
        except _Refusal as refusal:
            self._refuse(refusal, None)
            return
        if len(buffer) >= pending.length:
            self._start(pending)
            return
        # The body is on its way: a deadline for it, and room in the budget if it is large.
        self._pending = pending
        if pending.headers.get("expect", "").lower() == "100-continue" and self._transport is not None:
            self._transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self._serving = self._loop.create_task(self._receive(pending))

    def _parse_head(self, head: bytes) -> _Pending:
        lines = head.split(b"\r\n")
        request_line = lines[0]
        parts = request_line.split(b" ")
        if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or parts[2] not in (b"HTTP/1.1", b"HTTP/1.0"):
            raise _malformed(f"bad request line {clip(request_line.decode('latin-1'), 100)!r}")
        method, target, version = parts
        if not target.startswith(b"/"):
            raise _malformed(f"request target {clip(target.decode('latin-1'), 100)!r} is not a path")
        limit = self._intake.max_header_bytes
        if len(lines) - 1 > self._intake.max_headers:
            raise _malformed(f"more than {self._intake.max_headers} header fields")
        headers: dict[str, str] = {}
        for line in lines:
            if len(line) > limit:
                raise _malformed(f"a header line is over {limit} bytes")
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or not _TOKEN.fullmatch(name):
                raise _malformed(f"bad header line {clip(line.decode('latin-1'), 100)!r}")
            key = name.decode("ascii").lower()
            text = value.strip(b" \t").decode("latin-1")
            if key in headers:
                if key in ("content-length", "host", "content-type", "transfer-encoding"):
                    raise _malformed(f"header {key} given twice")
                headers[key] += ", " + text
            else:
                headers[key] = text
        path = target.partition(b"?")[0].decode("latin-1")
        if "transfer-encoding" in headers:
            message = "a request body must be sent with Content-Length, not Transfer-Encoding"
            raise _Refusal(411, "LengthRequired", message)
        declared = headers.get("content-length", "0")
        if not declared.isdigit() or not declared.isascii():
            raise _malformed(f"bad Content-Length {clip(declared, 40)!r}")
        length = int(declared)
        if length > self._intake.max_body_bytes:
            raise _Refusal(
                413,
                "RequestEntityTooLarge",
                f"the request body of {length} bytes exceeds {self._intake.max_body_bytes}",
                "too_large",
            )
        connection = headers.get("connection", "").lower()
        if version == b"HTTP/1.1":
            keep_alive = "close" not in connection
        else:
            keep_alive = "keep-alive" in connection
        return _Pending(method.decode("ascii"), path, headers, length, keep_alive)

    async def _receive(self, pending: _Pending) -> None:
        try:
            async with asyncio.timeout(self._intake.body_timeout):
                if pending.length > SMALL_BODY:
                    if self._transport is not None:
                        self._transport.pause_reading()  # nothing more is read until room is had
                    size = min(pending.length, self._budget.total)
                    await self._budget.take(size)
                    pending.reserved = size
                    if self._transport is not None:
                        self._transport.resume_reading()
                if len(self._buffer) < pending.length:
                    pending.arrived = self._loop.create_future()
                    await pending.arrived
        except TimeoutError:
            self._release(pending)
            self._pending = None
            self._serving = None
            message = f"request body not received within {self._intake.body_timeout:g}s"
            _client_errors.log(logger, logging.INFO, "%s: %s", clip(pending.path), message)
            self._refuse(_Refusal(408, "Timeout", message, "timeout"), pending.path)
            return
        except asyncio.CancelledError:
            self._release(pending)
            raise
        self._pending = None
        self._serving = None
        self._start(pending)

    def _release(self, pending: _Pending) -> None:
        if pending.reserved:
            self._budget.give_back(pending.reserved)
            pending.reserved = 0

    def _start(self, pending: _Pending) -> None:
        body = bytes(self._buffer[: pending.length])
        del self._buffer[: pending.length]
        self._release(pending)  # read whole: what the budget bounds is the bytes still to come
        self._serving = self._loop.create_task(self._serve(pending, body))

    async def _serve(self, pending: _Pending, body: bytes) -> None:
        try:
            encoding = pending.headers.get("content-encoding", "identity").strip().lower()
            if encoding != "identity":
                body = _decode(body, encoding, self._intake.max_body_bytes)
            request = Request(pending.method, pending.path, pending.headers, body)
            reply = await self._responder.respond(request)
        except _Refusal as refusal:
            self._serving = None
            self._refuse(refusal, pending.path)
            return
        except Exception as exc:
            # The responder answers whatever it is asked; this is a defect, still answered.
            logger.exception("could not answer a request on %s", clip(pending.path))
            self._serving = None
            message = f"could not process the request: {clip(str(exc), 200)}"
            self._refuse(_Refusal(400, "BadRequest", message), pending.path)
            return
        self._serving = None
        self._write(reply, keep_alive=pending.keep_alive and not reply.close)

    # -- answers ---------------------------------------------------------------------------------

    def _write(self, reply: Reply, *, keep_alive: bool) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        head = f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Unknown')}\r\n"
        for name, value in reply.headers:
            head += f"{name}: {value}\r\n"
        head += f"Content-Type: application/json\r\nContent-Length: {len(reply.body)}\r\n"
        if not keep_alive:
            head += "Connection: close\r\n"
        transport.write(head.encode("latin-1") + b"\r\n" + reply.body)
        if not keep_alive:
            self._close(transport)
            return
        self._arm(self._intake.idle_timeout, self._idle)
        if self._buffer and not self._writing_paused:
            transport.resume_reading()
            self._next_request()

    def _refuse(self, refusal: _Refusal, path: str | None) -> None:
        if path is not None:
            try:
                self._responder.refused(path, refusal.result)
            except Exception:
                logger.exception("could not count a refused request")
        self._buffer.clear()
        self._write(refusal.reply, keep_alive=False)

    # -- timers ----------------------------------------------------------------------------------

    def _arm(self, delay: float, callback: Callable[[], None]) -> None:
        # Every answer re-arms the idle deadline: a timer handle made and cancelled per request
        # was a thirtieth of the CPU per admission. A handle already due earlier is kept instead;
        # when it fires early it sets itself again for the deadline (_expire).
        self._deadline = deadline = self._loop.time() + delay
        self._timer_kind = callback
        timer = self._timer
        if timer is not None and timer.when() > deadline:
            timer.cancel()
            timer = None
        if timer is None:
            self._timer = self._loop.call_at(deadline, self._expire)

    def _disarm(self) -> None:
        self._timer_kind = None  # the handle, if any, finds nothing to do when it fires

    def _expire(self) -> None:
        self._timer = None
        callback = self._timer_kind
        if callback is None or self._transport is None:
            return
        if self._loop.time() < self._deadline:
            self._timer = self._loop.call_at(self._deadline, self._expire)
            return
        self._timer_kind = None
        callback()

    def _idle(self) -> None:
        if self._transport is not None and self._serving is None and not self._buffer:
            self._close(self._transport)

    def _close(self, transport: asyncio.Transport) -> None:
        """Close once the answer is out; a client that does not read it within ``header_timeout``
        is cut off (a close waits for the peer to take the buffered answer, which it may never)."""
        transport.close()
        if transport.get_write_buffer_size():
            self._loop.call_later(self._intake.header_timeout, self._abort, transport)

    def _abort(self, transport: asyncio.Transport) -> None:
        if self._transport is transport:  # not yet lost
            transport.abort()

    def _headers_too_slow(self) -> None:
        if self._transport is None or self._pending is not None or self._serving is not None:
            return
        timeout = self._intake.header_timeout
        _client_errors.log(
            logger, logging.INFO, "closed a connection whose request headers took over %.0fs", timeout
        )
        self._refuse(_Refusal(408, "Timeout", f"request headers not received within {timeout:g}s"), None)


def _malformed(detail: str) -> _Refusal:
    text = f"malformed HTTP request: {detail}"
    _client_errors.log(logger, logging.INFO, "%s", text)
    return _Refusal(400, "BadRequest", text)


def _line_too_long(buffer: bytearray, limit: int) -> bool:
    start = buffer.rfind(b"\n") + 1
    return len(buffer) - start > limit


def _decode(body: bytes, encoding: str, limit: int) -> bytes:
    if encoding == "gzip":
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        # RFC 9110's deflate is the zlib format; some clients send raw deflate, which zlib's
        # automatic header detection (47) does not cover: try the zlib format first.
        inflater = zlib.decompressobj(zlib.MAX_WBITS if body[:1] == b"\x78" else -zlib.MAX_WBITS)
    else:
        raise _Refusal(415, "UnsupportedMediaType", f"unsupported Content-Encoding {clip(encoding, 40)!r}")
    try:
        inflated = inflater.decompress(body, limit + 1)
        if len(inflated) <= limit and not inflater.unconsumed_tail:
            inflated += inflater.flush()
    except zlib.error as exc:
        message = f"could not read the request body: {encoding} content cannot be decoded: {exc}"
        _client_errors.log(logger, logging.INFO, "%s", message)
        raise _Refusal(400, "BadRequest", message) from exc
    if len(inflated) > limit or inflater.unconsumed_tail:
        raise _Refusal(
            413, "RequestEntityTooLarge", f"the request body inflates past {limit} bytes", "too_large"
        )
    if not inflater.eof:
        message = f"could not read the request body: the {encoding} content is truncated"
        _client_errors.log(logger, logging.INFO, "%s", message)
        raise _Refusal(400, "BadRequest", message)
    return inflated
