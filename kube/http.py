"""HTTP/1.1 for the unary requests and the watches of ``KubeApi``: a small pool of persistent TLS
connections to the one API server, and a connection of its own per watch, on an asyncio ``Protocol``.

Why not aiohttp's client: per request its machinery (request and payload objects, timers, stream
readers, the response object) cost the controller more than the planner did; the profiles are in
``docs/performance.md``. The API server's answers are regular -- a status line, a few headers, a
JSON body with a Content-Length or chunked -- so this does exactly that:

- a request is one write of pre-built bytes (request line, headers, body); no Accept-Encoding is
  sent, so answers come uncompressed, and one with a Content-Encoding fails;
- answers are parsed by httptools (llhttp, as uvicorn uses): Content-Length or chunked bodies;
  the head is bounded by ``MAX_HEAD``, the body by ``max_body`` (declared or as received);
- the whole request -- a connection opened (TCP, proxy tunnel, TLS handshake) and the answer --
  within its ``time_limit``;
- one request at a time per connection; a connection that broke, timed out, was left by a
  cancelled caller, sent bytes nobody asked for or answered ``Connection: close`` is closed, never
  reused; an idle one whose server closed it leaves the pool when the close arrives;
- a request on a reused connection that fails before any byte of its answer arrived is sent once
  more, on a fresh connection, when its method is idempotent (GET, PUT, DELETE): the server may
  have closed the idle connection while the request was on its way. A POST or PATCH may already
  have been acted on: its failure surfaces, and the caller's retry decides;
- through a proxy, each connection is a CONNECT tunnel; to an ``https://`` proxy the tunnel is
  TLS itself (checked against the system's trust store), the server's TLS inside it;
- a streamed answer (a watch) has a connection of its own, outside the pool's limit, closed when
  the stream is released. Its body is either handed to a sink inside the read itself -- a watch's
  events are decoded and applied without a task waking per event, the cost aiohttp's stream reader
  and an async generator added to every event -- or pulled chunk by chunk, reading paused while
  ``HttpStream.PAUSE_CHUNKS`` chunks wait, so a slow reader holds a bounded part of the stream. A
  stream silent for its idle timeout (not counting time paused) fails.

Failures are ``OSError``s (``ConnectionError`` subclasses below, ``TimeoutError``, ``ssl.SSLError``);
``kube.errors.from_connection_error`` makes them ``ConnectionFailed``.

Public API:

- ``HttpResponse(status, reason, headers, body)`` -- frozen; ``headers`` looked up by any case.
- ``HttpPool(server, ssl_context, *, server_hostname=None, proxy=None, proxy_authorization=None,
  max_connections=MAX_CONNECTIONS, max_body=MAX_BODY)`` -- ``server`` is the API server's URL
  (``https://host:port``, a path prefix allowed); made inside a running loop.
  - ``async request(method, target, headers, body, time_limit) -> HttpResponse`` -- ``target`` is the
    path and query after the server's own path prefix.
  - ``async stream(target, headers, time_limit, idle_timeout) -> HttpStream`` -- a GET whose head
    arrived within ``time_limit``; ``release(stream)`` when done.
  - ``opened -> int`` -- connections opened so far (the tests count reuse with it).
  - ``close()`` -- closes every connection and stream; requests in flight fail.
- ``HttpStream`` -- ``status``, ``reason``, ``headers``; ``async deliver(sink)`` (each chunk to
  ``sink(chunk)`` as it arrives, until the body ends; what ``sink`` raises ends the stream and is
  raised), ``async next_chunk() -> bytes`` (``b""`` at the end), ``async read_all(limit)``,
  ``close()``. A broken stream raises ``AnswerBroken``, a silent one ``TimeoutError``.
- ``ProxyRefused``, ``AnswerBroken``, ``AnswerTooLarge`` -- the failures this module adds.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import ssl
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final, NoReturn, TypeVar, cast
from urllib.parse import unquote, urlsplit

import httptools

__all__ = [
    "MAX_BODY",
    "MAX_CONNECTIONS",
    "AnswerBroken",
    "AnswerTooLarge",
    "HttpPool",
    "HttpResponse",
    "ProxyRefused",
]

# Requests in parallel to the server (kubernetes_asyncio's pool size, and aiohttp's before this).
MAX_CONNECTIONS: Final = 100
# The largest answer read. A list page of 500 objects is a few MiB on kube-apiserver (pods with
# managedFields are 5-10 KiB each); etcd keeps objects of up to 1.5 MiB, so a page of 500 large
# ConfigMaps or Secrets could in principle be far bigger. 256 MiB holds 170 objects at etcd's limit
# per page, and decoding it is still seconds, not minutes; past it the answer is refused, not held.
MAX_BODY: Final = 256 * 2**20
# A status line and headers: kube-apiserver sends under 1 KiB; Go's server allows 1 MiB of request
# headers, answers have no such rule, so this is the client's own bound.
MAX_HEAD: Final = 64 * 1024
# An idle connection is not reused after this long: the longer it sat idle, the likelier the server
# (or a load balancer in between) is closing it just as a request goes out. aiohttp keeps 15 s.
IDLE_REUSE: Final = 30.0
IDEMPOTENT: Final = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


class ProxyRefused(ConnectionError):
    """The proxy answered the CONNECT with something other than 200."""


class AnswerBroken(ConnectionError):
    """The connection ended or the answer could not be parsed before the answer was complete."""


class AnswerTooLarge(ConnectionError):
    """The answer's head or body is over the bound; it was not read further."""


class _Headers(dict[str, str]):
    """Header names stored lower-cased, looked up in any case (``Retry-After``, ``retry-after``)."""

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(key.lower(), default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())


@dataclass(frozen=True)
class HttpResponse:
    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes


class _Unanswered(Exception):
    """The request failed before any byte of its answer arrived (``cause`` says how)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _Answering(asyncio.Protocol):
    """One connection to the server and the answer arriving on it: the parts both kinds share --
    the head (bounded by ``MAX_HEAD``, identity encoding only), the transport, failing and aborting.
    The parser's callbacks fill the head; a subclass decides what becomes of the body."""

    def __init__(self, max_body: int) -> None:
        self._max_body = max_body
        self._parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self._received = 0
        self._head_done = False
        self._reason = b""
        self._headers: dict[str, str] = {}
        self._size = 0
        self._failure: BaseException | None = None
        self._head_size = 0

    def _reset_head(self) -> None:
        self._received = 0
        self._head_done = False
        self._reason = b""
        self._headers = {}
        self._size = 0
        self._head_size = 0

    def _fail(self, exc: BaseException) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.abort()

    def _feed(self, data: bytes) -> None:
        self._received += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(self._failure or AnswerBroken(f"the server's answer is not HTTP/1.1: {exc}"))
            return
        if not self._head_done and self._received > MAX_HEAD:
            self._fail(AnswerTooLarge(f"the answer's head is over {MAX_HEAD} bytes"))

    def _broken_text(self) -> str:
        if self._received == 0:
            return "the server closed the connection without answering"
        return f"the server closed the connection after {self._received} bytes of its answer"

    def _delimited_by_close(self) -> bool:
        headers = self._headers
        return "content-length" not in headers and "transfer-encoding" not in headers

    # -- asyncio callbacks -------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TLS transport has a Transport's methods without deriving from it.
        self.transport = cast(asyncio.Transport, transport)

    def eof_received(self) -> bool | None:
        return False  # close the transport: connection_lost follows

    # -- httptools callbacks -----------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._head_done:  # a second answer to one request
            self._stop(AnswerBroken("the server sent an answer nobody asked for"))

    def on_status(self, status: bytes) -> None:
        self._reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        # A head that came in one read is only seen here (data_received checks the ones still
        # arriving): the bound is on the fields themselves.
        self._head_size += len(name) + len(value)
        if self._head_size > MAX_HEAD:
            self._stop(AnswerTooLarge(f"the answer's head is over {MAX_HEAD} bytes"))
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers = self._headers
        if key in headers:
            text = f"{headers[key]}, {text}"
        headers[key] = text

    def on_headers_complete(self) -> None:
        self._head_done = True
        headers = self._headers
        encoding = headers.get("content-encoding", "identity")
        if encoding.strip().lower() != "identity":
            self._stop(AnswerBroken(f"the server sent a {encoding} body, which was not asked for"))
            return
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._max_body:
            self._stop(AnswerTooLarge(f"the answer's body of {declared} bytes is over {self._max_body}"))

    def _stop(self, exc: BaseException) -> NoReturn:
        # Raised inside a parser callback it would reach data_received as the parser's own error.
        self._failure = exc
        raise exc


class _Connection(_Answering):
    """A connection for unary requests, one exchange at a time; the body is kept whole."""

    def __init__(self, max_body: int) -> None:
        super().__init__(max_body)
        self.idle_since = 0.0
        self._waiter: asyncio.Future[HttpResponse] | None = None
        self._chunks: list[bytes] = []
        self._keep_alive = False

    # -- the exchange ------------------------------------------------------------------------------

    async def exchange(self, data: bytes, deadline: float) -> HttpResponse:
        """Send one request and wait for its whole answer until ``deadline`` (loop time); raises
        ``_Unanswered`` when the failure came before any byte of the answer, ``TimeoutError`` past
        the deadline. The caller closes the connection on any failure."""
        transport = self.transport
        if transport is None or self.lost:
            raise _Unanswered(AnswerBroken("the connection was closed before the request was sent"))
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[HttpResponse] = loop.create_future()
        self._waiter = waiter
        self._reset_head()
        self._chunks = []
        self._keep_alive = False
        # A timer of the loop's own rather than asyncio.timeout(), whose bookkeeping in Python was
        # 3 % of the controller's samples in a burst.
        timer = loop.call_at(deadline, self._expire, waiter)
        transport.write(data)
        try:
            return await waiter
        except ConnectionError as exc:
            if self._received == 0:
                raise _Unanswered(exc) from exc
            raise
        finally:
            timer.cancel()
            self._waiter = None

    def _expire(self, waiter: asyncio.Future[HttpResponse]) -> None:
        if not waiter.done():
            waiter.set_exception(TimeoutError())

    def _fail(self, exc: BaseException) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self.abort()

    @property
    def reusable(self) -> bool:
        return not self.lost and self._keep_alive

    # -- asyncio callbacks -------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():
            # Bytes for no request: the server and this side no longer agree where answers begin.
            self.abort()
            return
        self._feed(data)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.lost = True
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if exc is None and self._head_done and self._delimited_by_close():
            self.on_message_complete()
            return
        text = self._broken_text()
        waiter.set_exception(AnswerBroken(f"{text}: {exc}" if exc is not None else text))

    # -- httptools callbacks -----------------------------------------------------------------------

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size > self._max_body:
            self._stop(AnswerTooLarge(f"the answer's body is over {self._max_body} bytes"))
        self._chunks.append(body)

    def on_message_complete(self) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done() or self._failure is not None:
            return
        chunks = self._chunks
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        status = self._parser.get_status_code()
        # Asked here: once the callback returns, the parser is reset for the next message.
        self._keep_alive = self._parser.should_keep_alive()
        headers = _Headers(self._headers)
        waiter.set_result(HttpResponse(status, self._reason.decode("latin-1"), headers, body))
        self._waiter = None  # whatever the parser meets after this answer is no request's


BodySink = Callable[[bytes], None]


class HttpStream(_Answering):
    """A streamed answer on a connection of its own: the head first (``status``, ``reason``,
    ``headers``), then the body as it arrives, either handed to a sink inside the read itself
    (``deliver``: no task wakes per chunk) or pulled chunk by chunk (``next_chunk``), reading paused
    while ``PAUSE_CHUNKS`` wait unread. A stream silent for ``idle_timeout`` seconds fails with
    ``TimeoutError``. ``close()`` when done: the connection is never reused."""

    PAUSE_CHUNKS: Final = 64

    def __init__(self, max_body: int) -> None:
        super().__init__(max_body)
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._head: asyncio.Future[None] = loop.create_future()
        self._wake: asyncio.Future[None] | None = None
        self._unread: collections.deque[bytes] = collections.deque()
        self._sink: BodySink | None = None
        self._ended = False
        self._paused = False
        self._idle_timeout: float | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        self._last_data = 0.0
        self.status = 0
        self.reason = ""
        self.headers: Mapping[str, str] = _Headers()

    # -- the request and its head ------------------------------------------------------------------

    async def begin(self, data: bytes, idle_timeout: float | None) -> None:
        """Send the request and wait for the answer's head; the caller bounds the wait."""
        if self.transport is None or self.lost:
            raise AnswerBroken("the connection was closed before the request was sent")
        self._idle_timeout = idle_timeout
        self.transport.write(data)
        await self._head
        self._last_data = self._loop.time()
        if idle_timeout is not None:
            self._idle_timer = self._loop.call_at(self._last_data + idle_timeout, self._check_idle)

    def _check_idle(self) -> None:
        # One timer per period, not one moved on every chunk: when it fires it either ends the
        # stream or waits for the period of the last chunk.
        assert self._idle_timeout is not None
        if self._ended:
            return
        due = self._last_data + self._idle_timeout
        if self._loop.time() >= due and not self._paused:
            self._fail(TimeoutError(f"the stream was silent for {self._idle_timeout:g}s"))
        else:
            self._idle_timer = self._loop.call_at(max(due, self._loop.time() + 0.1), self._check_idle)

    # -- the body ----------------------------------------------------------------------------------

    async def deliver(self, sink: BodySink) -> None:
        """Hand every chunk of the body to ``sink`` as it arrives, until the body ends; an exception
        from ``sink`` ends the stream and is raised here, as is a broken or silent stream."""
        unread = self._unread
        while unread:
            chunk = unread.popleft()
            sink(chunk)
        self._sink = sink
        self._resume()
        while not self._ended:
            await self._sleep()
        if self._failure is not None:
            raise self._failure

    async def next_chunk(self) -> bytes:
        """The next chunk of the body; ``b""`` once it ended. A failure is raised once what came
        before it was read."""
        unread = self._unread
        while not unread and not self._ended:
            await self._sleep()
        if unread:
            chunk = unread.popleft()
            if len(unread) < self.PAUSE_CHUNKS // 2:
                self._resume()
            return chunk
        if self._failure is not None:
            raise self._failure
        return b""

    async def read_all(self, limit: int) -> bytes:
        """The rest of the body (an error's Status, say), at most ``limit`` bytes of it."""
        parts: list[bytes] = []
        size = 0
        while chunk := await self.next_chunk():
            size += len(chunk)
            if size > limit:
                raise AnswerTooLarge(f"the answer's body is over {limit} bytes")
            parts.append(chunk)
        return b"".join(parts)

    def close(self) -> None:
        if not self._head.done():
            self._head.cancel()  # nobody waits for it any more
        self._end(None)
        self.abort()

    async def _sleep(self) -> None:
        wake = self._loop.create_future()
        self._wake = wake
        try:
            await wake
        finally:
            self._wake = None

    def _wake_reader(self) -> None:
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    def _resume(self) -> None:
        if self._paused and not self.lost and self.transport is not None:
            self._paused = False
            self._last_data = self._loop.time()  # the time paused was the reader's, not silence
            self.transport.resume_reading()

    def _end(self, failure: BaseException | None) -> None:
        if self._ended:
            return
        self._ended = True
        if failure is not None and self._failure is None:
            self._failure = failure
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        head = self._head
        if not head.done():
            if self._failure is not None:
                head.set_exception(self._failure)
            else:
                head.set_exception(AnswerBroken(self._broken_text()))
        self._wake_reader()

    def _fail(self, exc: BaseException) -> None:
        self._end(exc)
        self.abort()

    # -- asyncio callbacks -------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._ended:
            self.abort()
            return
        self._last_data = self._loop.time()
        self._feed(data)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.lost = True
        if self._ended:
            return
        if exc is None and self._head_done and self._delimited_by_close():
            self._end(None)
            return
        text = self._broken_text()
        self._end(AnswerBroken(f"{text}: {exc}" if exc is not None else text))

    # -- httptools callbacks -----------------------------------------------------------------------

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self.status = self._parser.get_status_code()
        self.reason = self._reason.decode("latin-1")
        self.headers = _Headers(self._headers)
        if not self._head.done():
            self._head.set_result(None)

    def on_body(self, body: bytes) -> None:
        sink = self._sink
        if sink is not None:
            try:
                sink(body)
            except BaseException as exc:
                self._stop(exc)
            return
        unread = self._unread
        unread.append(body)
        if len(unread) >= self.PAUSE_CHUNKS and not self._paused and self.transport is not None:
            self._paused = True  # a reader that falls behind holds at most this many chunks
            self.transport.pause_reading()
        self._wake_reader()

    def on_message_complete(self) -> None:
        self._end(None)


_A = TypeVar("_A", bound=_Answering)


class _Tunnel(asyncio.Protocol):
    """A proxy's answer to CONNECT: its head, then the connection is handed to TLS."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self.answered: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        end = self._buffer.find(b"\r\n\r\n")
        if not self.answered.done():
            if end >= 0:
                self.answered.set_result(bytes(self._buffer[:end]))
            elif len(self._buffer) > MAX_HEAD:
                self.answered.set_exception(ProxyRefused("the proxy's answer to CONNECT is too long"))

    def connection_lost(self, exc: BaseException | None) -> None:
        if not self.answered.done():
            self.answered.set_exception(ProxyRefused(f"the proxy closed the connection: {exc or 'EOF'}"))


class HttpPool:
    def __init__(
        self,
        server: str,
        ssl_context: ssl.SSLContext | None,
        *,
        server_hostname: str | None = None,
        proxy: str | None = None,
        proxy_authorization: str | None = None,
        max_connections: int = MAX_CONNECTIONS,
        max_body: int = MAX_BODY,
    ) -> None:
        url = urlsplit(server)
        if url.scheme not in ("https", "http") or not url.hostname:
            raise ValueError(f"not an http(s) server URL: {server!r}")
        self._host = url.hostname
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._ssl = ssl_context if url.scheme == "https" else None
        self._server_hostname = server_hostname or None
        self._prefix = url.path.rstrip("/")
        netloc = url.netloc.rpartition("@")[2]
        self._host_line = f"Host: {netloc}\r\n"
        self._proxy = _proxy_address(proxy, proxy_authorization) if proxy else None
        self._proxy_ssl: ssl.SSLContext | None = None
        self._connect_line = f"CONNECT {self._authority()} HTTP/1.1\r\nHost: {self._authority()}\r\n"
        self._max_body = max_body
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()
        self._streams: set[HttpStream] = set()
        self._loop = asyncio.get_running_loop()
        self._closed = False
        self.opened = 0

    def _authority(self) -> str:
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"{host}:{self._port}"

    def _request_bytes(
        self, method: str, target: str, headers: Iterable[tuple[str, str]], body: bytes | None
    ) -> bytes:
        lines = [f"{method} {self._prefix}{target} HTTP/1.1\r\n", self._host_line]
        lines += [f"{name}: {value}\r\n" for name, value in headers]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body) if body is not None else 0}\r\n")
        lines.append("\r\n")
        text = "".join(lines)
        if text.count("\n") != len(lines) or text.count("\r") != len(lines):
            # A value with a line break of its own (from configuration) would smuggle a request.
            raise ValueError("a request line or header value contains a line break")
        data = text.encode("latin-1")
        if body:
            data += body
        return data

    async def request(
        self,
        method: str,
        target: str,
        headers: Iterable[tuple[str, str]],
        body: bytes | None,
        time_limit: float,
    ) -> HttpResponse:
        data = self._request_bytes(method, target, headers, body)
        deadline = self._loop.time() + time_limit
        slots = self._slots
        try:
            if slots.locked():  # every connection busy: wait for one, within the deadline
                async with asyncio.timeout_at(deadline):
                    await slots.acquire()
            else:
                await slots.acquire()  # at once
            try:
                return await self._send(method, data, deadline)
            finally:
                slots.release()
        except TimeoutError:
            raise TimeoutError(f"no answer from the server within {time_limit:g}s") from None

    async def stream(
        self,
        target: str,
        headers: Iterable[tuple[str, str]],
        time_limit: float,
        idle_timeout: float | None,
    ) -> HttpStream:
        """A GET whose answer is read as it arrives (a watch), on a fresh connection of its own that
        takes no slot of the unary requests': opened and the head received within ``time_limit``.
        The caller closes the stream."""
        data = self._request_bytes("GET", target, headers, None)
        stream: HttpStream | None = None
        try:
            async with asyncio.timeout(time_limit):
                stream = await self._open(HttpStream)
                self._streams.add(stream)
                await stream.begin(data, idle_timeout)
        except BaseException as exc:
            if stream is not None:
                self._streams.discard(stream)
                stream.close()
            if isinstance(exc, TimeoutError):
                raise TimeoutError(f"no answer from the server within {time_limit:g}s") from None
            raise
        return stream

    def release(self, stream: HttpStream) -> None:
        """Close a stream and forget it."""
        self._streams.discard(stream)
        stream.close()

    async def _send(self, method: str, data: bytes, deadline: float) -> HttpResponse:
        connection = self._take()
        if connection is not None:
            try:
                return await self._exchange(connection, data, deadline)
            except _Unanswered as unanswered:
                if method not in IDEMPOTENT:
                    raise unanswered.cause from None
        async with asyncio.timeout_at(deadline):
            connection = await self._open(_Connection)
        try:
            return await self._exchange(connection, data, deadline)
        except _Unanswered as unanswered:
            raise unanswered.cause from None

    async def _exchange(self, connection: _Connection, data: bytes, deadline: float) -> HttpResponse:
        self._busy.add(connection)
        try:
            response = await connection.exchange(data, deadline)
        except BaseException:  # a failure or a cancelled caller: the answer's end is unknown
            connection.abort()
            raise
        finally:
            self._busy.discard(connection)
        if connection.reusable and not self._closed:
            connection.idle_since = self._loop.time()
            self._idle.append(connection)
        else:
            connection.abort()
        return response

    def _take(self) -> _Connection | None:
        idle = self._idle
        now = self._loop.time()
        while idle:
            connection = idle.pop()  # the most recently used: the warmest, the least likely stale
            if not connection.lost and now - connection.idle_since < IDLE_REUSE:
                return connection
            connection.abort()
        return None

    async def _open(self, kind: type[_A]) -> _A:
        if self._closed:
            raise AnswerBroken("the client is closed")
        max_body = self._max_body
        loop = self._loop
        if self._proxy is None:
            _, connection = await loop.create_connection(
                lambda: kind(max_body), self._host, self._port, ssl=self._ssl,
                server_hostname=self._server_hostname if self._ssl is not None else None,
            )
        else:
            connection = await self._open_tunnel(kind)
        self.opened += 1
        if self._closed:
            connection.abort()
            raise AnswerBroken("the client is closed")
        return connection

    async def _open_tunnel(self, kind: type[_A]) -> _A:
        assert self._proxy is not None
        host, port, authorization, secure = self._proxy
        if secure:
            if self._proxy_ssl is None:
                self._proxy_ssl = ssl.create_default_context()
            transport, tunnel = await self._loop.create_connection(
                _Tunnel, host, port, ssl=self._proxy_ssl, server_hostname=host
            )
        else:
            transport, tunnel = await self._loop.create_connection(_Tunnel, host, port)
        try:
            request = self._connect_line
            if authorization:
                request += f"Proxy-Authorization: {authorization}\r\n"
            transport.write((request + "\r\n").encode("latin-1"))
            head = await tunnel.answered
            status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = status_line.split(" ", 2)
            if len(parts) < 2 or parts[1] != "200":
                refusal = f"the proxy refused the tunnel to {self._authority()}: {status_line[:200]}"
                raise ProxyRefused(refusal)
            connection = kind(self._max_body)
            if self._ssl is None:
                transport.set_protocol(connection)
                connection.connection_made(transport)
                return connection
            tls = await self._loop.start_tls(
                transport, connection, self._ssl, server_hostname=self._server_hostname or self._host
            )
        except BaseException:
            transport.abort()
            raise
        if tls is None:
            raise AnswerBroken("the tunnel closed during the TLS handshake")
        connection.connection_made(tls)
        return connection

    def close(self) -> None:
        self._closed = True
        for connection in (*self._idle, *self._busy):
            connection.abort()
        self._idle.clear()
        for stream in self._streams:
            stream.close()
        self._streams.clear()


def _proxy_address(proxy: str, authorization: str | None) -> tuple[str, int, str | None, bool]:
    url = urlsplit(proxy)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"a proxy must be an http:// or https:// URL, not {proxy!r}")
    if authorization is None and url.username is not None:
        credentials = f"{unquote(url.username)}:{unquote(url.password or '')}"
        authorization = "Basic " + base64.b64encode(credentials.encode()).decode("ascii")
    secure = url.scheme == "https"
    return url.hostname, url.port or (443 if secure else 80), authorization, secure
