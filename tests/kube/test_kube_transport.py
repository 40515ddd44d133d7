"""KubeApi through kubernetes_asyncio's session against a real small TLS server that answers as told:
what we rely on the library (and aiohttp under it) for -- keep-alive reuse, chunked answers, interim
1xx answers, stale and broken connections, bounds, timeouts, 401 renewal, Retry-After, TLS
verification and server names, CONNECT through proxies; on asyncio and on uvloop."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest
import uvloop

from certs.authority import CertificateAuthority, new_ca
from certs.serving import issue_serving_certificate
from kube import api as kube_api
from kube.api import KubeApi
from kube.client import make_api_client
from kube.errors import ConnectionFailed, TooManyRequests, Unauthorized
from kube.patches import PatchType
from kube.resources import CONFIGMAPS
from tests.kube.conftest import kubeconfig_file

WITHIN = 10.0
NAMESPACE_LIST = orjson.dumps({"kind": "NamespaceList", "apiVersion": "v1", "items": []})


@dataclass
class Request:
    connection: int  # which connection (0, 1, ...) of the server's
    index: int  # the how-manieth request on that connection
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


Answer = Callable[[Request, asyncio.StreamWriter], Awaitable[bool]]  # False: close the connection


@dataclass
class Server:
    port: int
    ca: CertificateAuthority
    requests: list[Request] = field(default_factory=list)
    connections: int = 0
    hung_up: set[int] = field(default_factory=set)  # connections the client closed

    async def hang_up_of(self, connection: int) -> None:
        for _ in range(200):
            if connection in self.hung_up:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"the client kept connection {connection} open")

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"


def _answer_bytes(status: int, body: bytes, *headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Nope'}", *headers]
    if not any(h.lower().startswith(("content-length", "transfer-encoding")) for h in headers):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def json_answer(request: Request, writer: asyncio.StreamWriter) -> bool:
    writer.write(_answer_bytes(200, NAMESPACE_LIST, "Content-Type: application/json"))
    return True


def _server_context(ca: CertificateAuthority, tmp_path: Path, *names: str) -> ssl.SSLContext:
    # Without names: the loopback address only, as the client dials it.
    serving = issue_serving_certificate(ca, names, ip_addresses=() if names else ("127.0.0.1",))
    stem = tmp_path / f"tls-{ca.certificate.serial_number}"
    cert, key = stem.with_suffix(".crt"), stem.with_suffix(".key")
    cert.write_bytes(serving.cert_pem)
    key.write_bytes(serving.key_pem)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert), str(key))
    return context


@contextlib.asynccontextmanager
async def serving(
    tmp_path: Path, answer: Answer = json_answer, *, names: tuple[str, ...] = ()
) -> AsyncIterator[Server]:
    """A TLS server on loopback whose ``answer`` writes what each request gets."""
    ca = new_ca("test-apiserver-ca")
    state = Server(0, ca)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number = state.connections
        state.connections += 1
        index = 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
                    state.hung_up.add(number)
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {
                    name.strip().lower(): value.strip()
                    for name, _, value in (line.partition(":") for line in lines[1:] if line)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                request = Request(number, index, method, target, headers, body)
                state.requests.append(request)
                index += 1
                if not await answer(request, writer):
                    return
                await writer.drain()
        except ConnectionError:  # the client left while the answer was written
            state.hung_up.add(number)
        except asyncio.CancelledError:  # the test is over
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=_server_context(ca, tmp_path, *names))
    state.port = server.sockets[0].getsockname()[1]
    try:
        async with server:
            yield state
    finally:
        server.close()


@contextlib.asynccontextmanager
async def api_for(
    server: Server, *, ca_pem: bytes | None = None, request_timeout: float = WITHIN,
    user: dict[str, str] | None = None, **cluster: str,
) -> AsyncIterator[KubeApi]:
    """A KubeApi made as the operator makes one, from a kubeconfig (``cluster``: its cluster's fields)."""
    ca = server.ca.cert_pem if ca_pem is None else ca_pem
    with tempfile.TemporaryDirectory(prefix="tfgang-kubeconfig-") as directory:
        user = user or {"token": "t0k3n"}
        path = kubeconfig_file(Path(directory) / "config", server.url, ca, user, **cluster)
        api = KubeApi(
            await make_api_client(path), qps=0, user_agent="tfgang-test/1", request_timeout=request_timeout
        )
        try:
            yield api
        finally:
            await api.close()


async def _namespaces(api: KubeApi) -> str:
    return str((await api.get(CONFIGMAPS, "x", "ns"))["kind"])


async def test_requests_reuse_one_kept_alive_connection_and_send_what_the_api_needs(tmp_path: Path) -> None:
    async with serving(tmp_path) as server, api_for(server) as api:
        for _ in range(4):
            assert await _namespaces(api) == "NamespaceList"
        await api.create(CONFIGMAPS, {"metadata": {"name": "a"}, "data": {"k": "ü"}}, "ns")
        await api.patch(CONFIGMAPS, "a", {"data": None}, "ns", patch_type=PatchType.MERGE)
        await api.delete(CONFIGMAPS, "a", "ns")
    assert server.connections == 1
    assert [r.index for r in server.requests] == list(range(7))
    get, create, patch, delete = (server.requests[i] for i in (0, 4, 5, 6))
    assert (get.method, get.target) == ("GET", "/api/v1/namespaces/ns/configmaps/x")
    assert get.headers["host"] == f"127.0.0.1:{server.port}"
    assert get.headers["authorization"] == "Bearer t0k3n"
    assert get.headers["user-agent"] == "tfgang-test/1"
    assert get.headers["accept"] == "application/json"
    assert get.headers["accept-encoding"] == "identity"  # answers come uncompressed
    assert "content-length" not in get.headers and get.body == b""
    assert create.method == "POST" and create.headers["content-type"] == "application/json"
    assert orjson.loads(create.body) == {"metadata": {"name": "a"}, "data": {"k": "ü"}}
    assert int(create.headers["content-length"]) == len(create.body)
    assert patch.headers["content-type"] == "application/merge-patch+json"
    assert delete.method == "DELETE" and orjson.loads(delete.body)["kind"] == "DeleteOptions"


async def test_a_chunked_answer_is_read_whole_and_the_connection_kept(tmp_path: Path) -> None:
    async def chunked(request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        writer.write(b"Transfer-Encoding: chunked\r\n\r\n")
        for part in (NAMESPACE_LIST[:5], NAMESPACE_LIST[5:20], NAMESPACE_LIST[20:]):
            writer.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            await writer.drain()
            await asyncio.sleep(0.02)  # separate reads on the client's side
        writer.write(b"0\r\n\r\n")
        return True

    async with serving(tmp_path, chunked) as server, api_for(server) as api:
        assert await _namespaces(api) == "NamespaceList"
        assert await _namespaces(api) == "NamespaceList"
    assert server.connections == 1


async def test_a_connection_the_server_closed_after_answering_is_not_reused(tmp_path: Path) -> None:
    async def answer_then_close(request: Request, writer: asyncio.StreamWriter) -> bool:
        await json_answer(request, writer)
        return False  # no Connection: close said; the server just hangs up

    async with serving(tmp_path, answer_then_close) as server, api_for(server) as api:
        assert await _namespaces(api) == "NamespaceList"
        await asyncio.sleep(0.1)  # the close arrives while the connection is idle in the pool
        assert await _namespaces(api) == "NamespaceList"
        await asyncio.sleep(0.1)
        await api.create(CONFIGMAPS, {"metadata": {"name": "a"}}, "ns")  # a POST is never retried
    assert server.connections == 3
    assert [(r.connection, r.index) for r in server.requests] == [(0, 0), (1, 0), (2, 0)]


async def test_an_answer_saying_connection_close_ends_its_connection(tmp_path: Path) -> None:
    async def says_close(request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(_answer_bytes(200, NAMESPACE_LIST, "Connection: close"))
        return True  # and would go on reading, were the client to send more on it

    async with serving(tmp_path, says_close) as server, api_for(server) as api:
        assert await _namespaces(api) == "NamespaceList"
        await server.hang_up_of(0)
        assert await _namespaces(api) == "NamespaceList"
    assert [(r.connection, r.index) for r in server.requests] == [(0, 0), (1, 0)]


async def _closes_the_second_request(request: Request, writer: asyncio.StreamWriter) -> bool:
    if request.index == 1:
        return False  # read, never answered: a server closing an idle connection as it arrived
    return await json_answer(request, writer)


async def test_an_idempotent_request_is_sent_again_once_when_a_reused_connection_was_stale(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, _closes_the_second_request) as server, api_for(server) as api:
        assert await _namespaces(api) == "NamespaceList"
        assert await _namespaces(api) == "NamespaceList"  # on connection 0, unanswered; again on 1
    assert [(r.connection, r.index, r.method) for r in server.requests] == [
        (0, 0, "GET"), (0, 1, "GET"), (1, 0, "GET"),
    ]  # fmt: skip


async def test_a_post_on_a_stale_connection_is_not_sent_twice(tmp_path: Path) -> None:
    async with serving(tmp_path, _closes_the_second_request) as server, api_for(server) as api:
        assert await _namespaces(api) == "NamespaceList"
        with pytest.raises(ConnectionFailed, match="Server disconnected"):
            await api.create(CONFIGMAPS, {"metadata": {"name": "a"}}, "ns")
        assert await _namespaces(api) == "NamespaceList"
        with pytest.raises(ConnectionFailed):  # a PATCH neither
            await api.patch(CONFIGMAPS, "a", {}, "ns", patch_type=PatchType.MERGE)
        assert await _namespaces(api) == "NamespaceList"
    assert [(r.connection, r.index, r.method) for r in server.requests] == [
        (0, 0, "GET"), (0, 1, "POST"), (1, 0, "GET"), (1, 1, "PATCH"), (2, 0, "GET"),
    ]  # fmt: skip


async def test_an_answer_cut_off_mid_body_fails_clearly_and_its_connection_is_dropped(tmp_path: Path) -> None:
    async def half(request: Request, writer: asyncio.StreamWriter) -> bool:
        if request.connection > 0:
            return await json_answer(request, writer)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b'{"kind": "Half"')
        await writer.drain()
        await asyncio.sleep(0.05)
        return False

    async with serving(tmp_path, half) as server, api_for(server) as api:
        with pytest.raises(ConnectionFailed, match=r"received 15 of 1000 bytes") as failed:
            await _namespaces(api)
        assert failed.value.reason == "ClientPayloadError"
        assert await _namespaces(api) == "NamespaceList"
    # The GET was not sent again by itself (part of its answer had come), and not on the broken connection.
    assert [(r.connection, r.index) for r in server.requests] == [(0, 0), (1, 0)]


async def test_oversized_answers_are_refused_without_being_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kube_api, "MAX_BODY", 8192)
    big = b"x" * 5000

    async def oversized(request: Request, writer: asyncio.StreamWriter) -> bool:
        if request.target.endswith("/declared"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 50000000\r\n\r\n" + big)
        elif request.target.endswith("/chunked"):
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for _ in range(3):
                writer.write(f"{len(big):x}\r\n".encode() + big + b"\r\n")
        elif request.target.endswith("/head"):
            writer.write(b"HTTP/1.1 200 OK\r\n" + b"X-Filler: " + b"y" * 100_000 + b"\r\n\r\n")
        else:
            return await json_answer(request, writer)
        return True

    async with serving(tmp_path, oversized) as server, api_for(server) as api:
        for case, match in (("declared", "50000000 bytes is over 8192"), ("chunked", "over 8192 bytes")):
            with pytest.raises(ConnectionFailed, match=match) as failed:
                await api.get(CONFIGMAPS, case, "ns")
            assert failed.value.reason == "AnswerTooLarge"
        with pytest.raises(ConnectionFailed, match="8190"):  # aiohttp's bound on a header field
            await api.get(CONFIGMAPS, "head", "ns")
        assert await _namespaces(api) == "NamespaceList"


async def test_a_request_without_an_answer_times_out_and_its_connection_is_dropped(tmp_path: Path) -> None:
    async def silent_first(request: Request, writer: asyncio.StreamWriter) -> bool:
        if request.connection == 0 and request.index == 1:
            await asyncio.sleep(1)  # longer than the client waits; its late answer must go nowhere
            writer.write(_answer_bytes(200, b'{"kind": "Late"}'))
            return True
        return await json_answer(request, writer)

    async with serving(tmp_path, silent_first) as server, api_for(server, request_timeout=0.5) as api:
        assert await _namespaces(api) == "NamespaceList"
        with pytest.raises(ConnectionFailed, match="TimeoutError"):
            await _namespaces(api)
        await server.hang_up_of(0)  # closed at once, not left open for its late answer
        assert await _namespaces(api) == "NamespaceList"
    assert [(r.connection, r.index) for r in server.requests] == [(0, 0), (0, 1), (1, 0)]


async def test_a_server_that_never_finishes_the_handshake_times_the_request_out(tmp_path: Path) -> None:
    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await reader.read()  # takes the ClientHello, never answers it
        writer.close()

    ca = new_ca("unused")
    async with await asyncio.start_server(mute, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        mute_server = Server(port, ca)
        async with api_for(mute_server, request_timeout=0.3) as api:
            with pytest.raises(ConnectionFailed, match="TimeoutError"):
                await asyncio.wait_for(_namespaces(api), WITHIN)


@pytest.mark.parametrize("interim", [b"HTTP/1.1 103 Early Hints\r\nLink: </hint>; rel=preload\r\n\r\n",
                                     b"HTTP/1.1 100 Continue\r\n\r\n"], ids=["103", "100"])
async def test_an_interim_answer_never_hands_one_requests_answer_to_the_next(
    tmp_path: Path, interim: bytes
) -> None:
    async def hinted(request: Request, writer: asyncio.StreamWriter) -> bool:
        if request.index == 0:
            writer.write(interim)  # an informational answer first, in its own read
            await writer.drain()
            await asyncio.sleep(0.05)
        body = orjson.dumps({"kind": f"Answer{request.index}", "apiVersion": "v1"})
        writer.write(_answer_bytes(200, body, "Content-Type: application/json"))
        return True

    async with serving(tmp_path, hinted) as server, api_for(server) as api:
        kinds = [await _namespaces(api) for _ in range(3)]
    assert kinds == ["Answer0", "Answer1", "Answer2"]
    assert server.connections == 1  # the same kept-alive connection throughout


async def test_a_cancelled_request_leaves_no_answer_behind_for_the_next(tmp_path: Path) -> None:
    async def slow_first(request: Request, writer: asyncio.StreamWriter) -> bool:
        if request.connection == 0 and request.index == 1:
            await asyncio.sleep(0.3)
            writer.write(_answer_bytes(200, b'{"kind": "ForTheCancelledOne"}'))
            return True
        return await json_answer(request, writer)

    async with serving(tmp_path, slow_first) as server, api_for(server) as api:
        assert await _namespaces(api) == "NamespaceList"
        task = asyncio.create_task(_namespaces(api))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.4)
        assert await _namespaces(api) == "NamespaceList"
    assert server.connections == 2


def _status(code: int, reason: str) -> bytes:
    return orjson.dumps({"kind": "Status", "code": code, "reason": reason, "message": reason})


async def test_a_401_renews_the_credentials_and_error_statuses_keep_their_headers(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("stale")

    async def guarded(request: Request, writer: asyncio.StreamWriter) -> bool:
        if request.headers.get("authorization") != "Bearer fresh":
            writer.write(_answer_bytes(401, _status(401, "Unauthorized")))
        elif request.target.endswith("/busy"):
            writer.write(_answer_bytes(429, _status(429, "TooManyRequests"), "Retry-After: 7"))
        else:
            return await json_answer(request, writer)
        return True

    async with serving(tmp_path, guarded) as server, api_for(server, user={"tokenFile": str(token)}) as api:
        with pytest.raises(Unauthorized):
            await _namespaces(api)
        token.write_text("fresh")  # the kubelet rotated it; read again because of the 401
        assert await _namespaces(api) == "NamespaceList"
        with pytest.raises(TooManyRequests) as busy:
            await api.get(CONFIGMAPS, "busy", "ns")
        assert busy.value.retry_after == 7.0
    assert server.connections == 1  # error answers leave the connection usable


async def test_a_server_certificate_the_ca_does_not_vouch_for_is_a_clear_error(tmp_path: Path) -> None:
    other = new_ca("someone-else")
    async with serving(tmp_path) as server, api_for(server, ca_pem=other.cert_pem) as api:
        with pytest.raises(ConnectionFailed, match="certificate verify failed") as failed:
            await _namespaces(api)
        assert failed.value.status == 0
    assert server.requests == []


async def test_the_tls_server_name_is_what_the_certificate_is_checked_against(tmp_path: Path) -> None:
    async with serving(tmp_path, names=("api.cluster.internal",)) as server:
        async with api_for(server, **{"tls-server-name": "api.cluster.internal"}) as api:
            assert await _namespaces(api) == "NamespaceList"
        async with api_for(server) as api:  # 127.0.0.1 is not a name the certificate has
            with pytest.raises(ConnectionFailed, match="certificate verify failed"):
                await _namespaces(api)
    assert len(server.requests) == 1


@contextlib.asynccontextmanager
async def tunnelling_proxy(first_heads: list[bytes], tls: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    """An HTTP proxy (HTTPS with ``tls``) that answers CONNECT with 200, then relays bytes both ways."""

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        first_heads.append(head)
        host, port = head.split(b" ")[1].decode().rsplit(":", 1)
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        with contextlib.suppress(asyncio.CancelledError):  # the test is over
            await asyncio.gather(relay(reader, upstream_writer), relay(upstream_reader, writer))

    proxy = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    async with proxy:
        yield proxy.sockets[0].getsockname()[1]


async def test_requests_go_through_a_connect_tunnel_with_the_proxys_credentials(tmp_path: Path) -> None:
    heads: list[bytes] = []
    async with serving(tmp_path) as server, tunnelling_proxy(heads) as proxy_port:
        proxy = f"http://ann:s%3Acret@127.0.0.1:{proxy_port}"
        async with api_for(server, **{"proxy-url": proxy}) as api:
            assert await _namespaces(api) == "NamespaceList"
            assert await _namespaces(api) == "NamespaceList"
    assert len(heads) == 1 and server.connections == 1  # one tunnel, kept alive
    lines = heads[0].decode().split("\r\n")
    assert lines[0] == f"CONNECT 127.0.0.1:{server.port} HTTP/1.1"
    assert "Proxy-Authorization: Basic YW5uOnM6Y3JldA==" in lines  # ann:s:cret


def test_the_same_paths_work_on_uvloop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The controller and the webhook run on uvloop, whose TLS transport and start_tls are its own.
    async def scenario() -> None:
        await test_requests_reuse_one_kept_alive_connection_and_send_what_the_api_needs(tmp_path)
        await test_a_chunked_answer_is_read_whole_and_the_connection_kept(tmp_path)
        await test_an_idempotent_request_is_sent_again_once_when_a_reused_connection_was_stale(tmp_path)
        await test_an_answer_cut_off_mid_body_fails_clearly_and_its_connection_is_dropped(tmp_path)
        await test_requests_go_through_a_connect_tunnel_with_the_proxys_credentials(tmp_path)

    uvloop.run(scenario())
