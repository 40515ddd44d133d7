"""Watches (kube/api.py ``watch`` and ``watch_into``) and streams through kubernetes_asyncio's session
against a real small TLS server that streams as told: events split and joined across chunks, the
watch's connection closed after it, error events and refusals, a slow reader holding a bounded part
of the stream, silent and cut-off streams, over-long lines; on asyncio and on uvloop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
import uvloop

from kube import api as kube_api
from kube.api import KubeApi, WatchEvent
from kube.errors import ConnectionFailed, Forbidden, Gone, Unauthorized
from kube.resources import CONFIGMAPS, PODS
from tests.kube.test_kube_transport import (
    WITHIN,
    Request,
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


async def test_a_watchs_connection_is_closed_after_it_and_its_events_are_decoded_however_they_are_chunked(
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
        # A watch the server ended leaves its connection kept alive, for aiohttp to reuse.
        assert await _namespaces(api) == "NamespaceList"
        watch = next(request for request in server.requests if "watch=true" in request.target)
    assert _names(received) == [("ADDED", "a"), ("MODIFIED", "b"), ("DELETED", "c"), ("BOOKMARK", "")]
    assert received[3].object["metadata"]["resourceVersion"] == "9"
    assert watch.method == "GET"
    assert watch.target == (
        "/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=1&timeoutSeconds=30"
        "&allowWatchBookmarks=true&labelSelector=app%3Dx"
    )
    assert watch.headers["authorization"] == "Bearer t0k3n"


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
        api_for(server, **{"proxy-url": f"http://ann:pw@127.0.0.1:{proxy_port}"}) as api,
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
        await server.hang_up_of(0)  # the watches ended by their ERROR event closed their connections
        await server.hang_up_of(1)


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
        with pytest.raises(ConnectionFailed, match="ClientPayloadError"):
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
    sent = 8000
    padded = _event("MODIFIED", "p" * 4000, 5)  # about 4 KiB a line
    written = 0

    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        nonlocal written
        writer.write(STREAM_HEAD)
        if "watch=true" in request.target:
            for _ in range(sent):
                writer.write(_chunk(padded))
                await writer.drain()  # blocks once the client stops reading
                written += len(padded)
            writer.write(b"0\r\n\r\n")
        await asyncio.sleep(WITHIN)  # "log": nothing after the head
        return False

    async with serving(tmp_path, answer) as server, api_for(server) as api:
        started = asyncio.get_running_loop().time()
        with pytest.raises(ConnectionFailed, match="Timeout"):
            async for _ in api.stream(PODS, "p", "ns", subresource="log", idle_timeout=0.3):
                pass
        assert asyncio.get_running_loop().time() - started < 3.0

        events = api.watch(CONFIGMAPS, "ns", resource_version="1", timeout_seconds=30)
        received = [await anext(events)]
        await asyncio.sleep(1.0)  # not reading
        held = written - len(padded)
        # aiohttp pauses reading at twice its 2 MiB read buffer; the kernel's socket buffers on both
        # sides (up to about 10 MiB on loopback) hold the rest.
        assert held < 20 * 2**20, f"a reader that did not read let {held} bytes of {sent} events be sent"
        received += [event async for event in events]
    assert len(received) == sent


def test_the_same_watches_work_on_uvloop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The controller runs on uvloop, whose TLS transport pauses and resumes reading its own way.
    async def scenario() -> None:
        await test_a_watchs_connection_is_closed_after_it_and_its_events_are_decoded_however_they_are_chunked(
            tmp_path
        )
        await test_a_watch_cut_off_mid_stream_fails_after_handing_on_what_arrived(tmp_path)
        await test_a_silent_stream_times_out_and_a_slow_reader_holds_a_bounded_part_of_it(tmp_path)

    uvloop.run(scenario())
