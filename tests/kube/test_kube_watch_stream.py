"""Watches on KubeApi's own HTTP client (kube/http.py ``HttpStream``, kube/api.py ``watch`` and
``watch_into``) against a real small TLS server that streams as told: events split and joined across
chunks, a connection of the watch's own, error events and refusals, a slow reader holding a bounded
part of the stream, silent and cut-off streams, over-long lines; on asyncio and on uvloop."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
import uvloop

from kube import api as kube_api
from kube.api import KubeApi, WatchEvent
from kube.errors import ConnectionFailed, Forbidden, Gone, Unauthorized
from kube.http import HttpPool, HttpStream
from kube.resources import CONFIGMAPS
from tests.kube.test_kube_http import (
    WITHIN,
    Request,
    Server,
    _answer_bytes,
    _namespaces,
    api_for,
    serving,
    tunnelling_proxy,
)

STREAM_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"


def _event(kind: str, name: str, version: int) -> bytes:
    obj = {"kind": "ConfigMap", "apiVersion": "v1",
           "metadata": {"name": name, "namespace": "ns", "resourceVersion": str(version)}}  # fmt: skip
    return orjson.dumps({"type": kind, "object": obj}) + b"\n"


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def _send_chunks(writer: asyncio.StreamWriter, parts: list[bytes], *, end: bool = True) -> None:
    writer.write(STREAM_HEAD)
    for part in parts:
        writer.write(_chunk(part))
        await writer.drain()
        await asyncio.sleep(0.01)  # separate reads on the client's side
    if end:
        writer.write(b"0\r\n\r\n")


async def _watch_into(api: KubeApi, on_event: Callable[[WatchEvent], None], version: str = "1") -> None:
    await api.watch_into(CONFIGMAPS, "ns", resource_version=version, timeout_seconds=5, on_event=on_event)


def _names(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(event.type, event.object["metadata"].get("name", "")) for event in events]


async def test_a_watch_has_a_connection_of_its_own_and_its_events_are_decoded_however_they_are_chunked(
    tmp_path: Path,
) -> None:
    first, second, third = _event("ADDED", "a", 2), _event("MODIFIED", "b", 3), _event("DELETED", "c", 4)
    bookmark = orjson.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}) + b"\n"
    parts = [first + second[:7], second[7:20], second[20:] + b"\n", third[:-1], b"\n" + bookmark]

    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        if "watch=true" not in request.target:
            writer.write(_answer_bytes(200, b'{"kind": "NamespaceList", "items": []}'))
            return True
        await _send_chunks(writer, parts)
        return True

    async with serving(tmp_path, answer) as server, api_for(server) as api:
        assert await _namespaces(api) == "NamespaceList"
        received: list[WatchEvent] = []
        await api.watch_into(
            CONFIGMAPS, "ns", resource_version="1", timeout_seconds=30, on_event=received.append,
            label_selector="app=x",
        )
        assert await _namespaces(api) == "NamespaceList"  # the unary connection is still the first
        await server.hang_up_of(1)  # the watch's connection is closed once the watch ended
    assert _names(received) == [("ADDED", "a"), ("MODIFIED", "b"), ("DELETED", "c"), ("BOOKMARK", "")]
    assert received[3].object["metadata"]["resourceVersion"] == "9"
    assert server.connections == 2
    watch = next(request for request in server.requests if "watch=true" in request.target)
    assert watch.connection == 1 and watch.method == "GET"
    assert watch.target == (
        "/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=1&timeoutSeconds=30"
        "&allowWatchBookmarks=true&labelSelector=app%3Dx"
    )
    assert watch.headers["authorization"] == "Bearer t0k3n"
    assert "accept-encoding" not in watch.headers
    assert [request.connection for request in server.requests if request is not watch] == [0, 0]


async def test_the_watch_generator_gives_the_same_events_and_a_last_line_without_its_newline(
    tmp_path: Path,
) -> None:
    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        await _send_chunks(writer, [_event("ADDED", "a", 2) + _event("ADDED", "b", 3)[:10],
                                    _event("ADDED", "b", 3)[10:-1]])  # fmt: skip
        return True

    async with serving(tmp_path, answer) as server, api_for(server) as api:
        stream = api.watch(CONFIGMAPS, "ns", resource_version="1", timeout_seconds=5)
        events = [event async for event in stream]
    assert _names(events) == [("ADDED", "a"), ("ADDED", "b")]


async def test_a_watch_goes_through_the_proxy_tunnel_as_the_other_requests_do(tmp_path: Path) -> None:
    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        await _send_chunks(writer, [_event("ADDED", "a", 2)])
        return True

    heads: list[bytes] = []
    received: list[WatchEvent] = []
    async with (
        serving(tmp_path, answer) as server,
        tunnelling_proxy(heads) as proxy_port,
        api_for(server, proxy_url=f"http://ann:pw@127.0.0.1:{proxy_port}") as api,
    ):
        await _watch_into(api, received.append)
    assert _names(received) == [("ADDED", "a")]
    assert len(heads) == 1 and heads[0].startswith(f"CONNECT 127.0.0.1:{server.port} HTTP/1.1\r\n".encode())
    assert b"Proxy-Authorization: Basic YW5uOnB3" in heads[0]  # ann:pw


async def test_error_events_and_refused_watches_raise_their_errors(tmp_path: Path) -> None:
    expired = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    gone = {"type": "ERROR", "object": expired}

    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        if "resourceVersion=1&" in request.target:
            await _send_chunks(writer, [_event("ADDED", "a", 2) + orjson.dumps(gone) + b"\n"])
        elif "resourceVersion=2&" in request.target:
            status = {"kind": "Status", "code": 403, "reason": "Forbidden", "message": "no watching"}
            writer.write(_answer_bytes(403, orjson.dumps(status), "Content-Type: application/json"))
        else:
            writer.write(_answer_bytes(401, b'{"kind": "Status", "code": 401, "reason": "Unauthorized"}'))
        return True

    async with serving(tmp_path, answer) as server, api_for(server) as api:
        received: list[WatchEvent] = []
        with pytest.raises(Gone, match="too old"):
            await _watch_into(api, received.append)
        assert _names(received) == [("ADDED", "a")]  # what came before the error was handed on
        with pytest.raises(Gone):
            async for event in api.watch(CONFIGMAPS, "ns", resource_version="1", timeout_seconds=5):
                received.append(event)
        assert _names(received) == [("ADDED", "a"), ("ADDED", "a")]
        with pytest.raises(Forbidden, match="no watching"):
            await _watch_into(api, received.append, "2")
        with pytest.raises(Unauthorized):
            await _watch_into(api, received.append, "3")
        for connection in range(server.connections):
            await server.hang_up_of(connection)  # every watch's connection was closed


async def test_what_the_event_callback_raises_ends_the_watch_and_is_raised(tmp_path: Path) -> None:
    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        await _send_chunks(writer, [_event("ADDED", "a", 2), _event("ADDED", "b", 3)], end=False)
        await asyncio.sleep(WITHIN)
        return False

    def refuse(event: WatchEvent) -> None:
        raise RuntimeError(f"cannot take {event.object['metadata']['name']}")

    async with serving(tmp_path, answer) as server, api_for(server) as api:
        with pytest.raises(RuntimeError, match="cannot take a"):
            await _watch_into(api, refuse)
        await server.hang_up_of(0)


async def test_a_watch_cut_off_mid_stream_fails_after_handing_on_what_arrived(tmp_path: Path) -> None:
    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        await _send_chunks(writer, [_event("ADDED", "a", 2), _event("ADDED", "b", 3)[:15]], end=False)
        return False  # the server closes without the body's last chunk

    async with serving(tmp_path, answer) as server, api_for(server) as api:
        received: list[WatchEvent] = []
        with pytest.raises(ConnectionFailed, match="closed the connection"):
            await _watch_into(api, received.append)
    assert _names(received) == [("ADDED", "a")]


async def test_an_overlong_watch_line_breaks_the_stream_instead_of_being_buffered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kube_api, "MAX_WATCH_LINE", 4096)

    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        await _send_chunks(writer, [_event("ADDED", "a", 2)] + [b"x" * 1024] * 8, end=False)
        await asyncio.sleep(WITHIN)
        return False

    async with serving(tmp_path, answer) as server, api_for(server) as api:
        received: list[WatchEvent] = []
        with pytest.raises(ConnectionFailed, match="over 4096 bytes"):
            await _watch_into(api, received.append)
        await server.hang_up_of(0)
    assert _names(received) == [("ADDED", "a")]


async def test_a_silent_stream_times_out_and_a_slow_reader_holds_a_bounded_part_of_it(tmp_path: Path) -> None:
    sent = 2000
    piece = b"y" * 4095 + b"\n"

    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(STREAM_HEAD)
        if request.target == "/flood":
            for _ in range(sent):
                writer.write(_chunk(piece))
                await writer.drain()  # blocks once the client stops reading
            writer.write(b"0\r\n\r\n")
        await asyncio.sleep(WITHIN)  # "/silent": nothing after the head
        return False

    async with serving(tmp_path, answer) as server:
        pool = HttpPool(server.url, _client_context(server))
        try:
            silent = await pool.stream("/silent", [], WITHIN, idle_timeout=0.3)
            started = asyncio.get_running_loop().time()
            with pytest.raises(TimeoutError, match=r"silent for 0\.3s"):
                await silent.deliver(lambda chunk: None)
            assert asyncio.get_running_loop().time() - started < 3.0
            pool.release(silent)

            flood = await pool.stream("/flood", [], WITHIN, idle_timeout=0.3)
            await asyncio.sleep(1.0)  # not reading, longer than the idle timeout: paused is not silent
            held = _unread_bytes(flood)
            assert held < 2 * 2**20, f"a reader that did not read holds {held} bytes"
            received = 0
            while chunk := await flood.next_chunk():
                assert chunk == piece
                received += 1
            assert received == sent
            pool.release(flood)
        finally:
            pool.close()


async def test_time_paused_behind_a_slow_reader_does_not_count_as_silence(tmp_path: Path) -> None:
    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(STREAM_HEAD + b"".join(_chunk(b"z\n") for _ in range(HttpStream.PAUSE_CHUNKS)))
        await asyncio.sleep(WITHIN)  # then silent
        return False

    async with serving(tmp_path, answer) as server:
        pool = HttpPool(server.url, _client_context(server))
        try:
            stream = await pool.stream("/", [], WITHIN, idle_timeout=0.3)
            await asyncio.sleep(1.0)  # the reader away three idle periods, the stream paused
            for _ in range(HttpStream.PAUSE_CHUNKS):
                assert await stream.next_chunk() == b"z\n"
            resumed = asyncio.get_running_loop().time()
            with pytest.raises(TimeoutError):
                await stream.next_chunk()
            # A whole idle period of silence after reading resumed, not what was left of one.
            assert asyncio.get_running_loop().time() - resumed >= 0.29
            pool.release(stream)
        finally:
            pool.close()


def _unread_bytes(stream: HttpStream) -> int:
    return sum(len(chunk) for chunk in stream._unread)


def _client_context(server: Server) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=server.ca.cert_pem.decode())


def test_the_same_watches_work_on_uvloop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The controller runs on uvloop, whose TLS transport pauses and resumes reading its own way.
    async def scenario() -> None:
        await test_a_watch_has_a_connection_of_its_own_and_its_events_are_decoded_however_they_are_chunked(
            tmp_path
        )
        await test_a_watch_cut_off_mid_stream_fails_after_handing_on_what_arrived(tmp_path)
        await test_a_silent_stream_times_out_and_a_slow_reader_holds_a_bounded_part_of_it(tmp_path)

    uvloop.run(scenario())
