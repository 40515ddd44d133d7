"""make_api_client: a kubeconfig when given, the in-cluster account otherwise, clear errors when neither."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from kube.api import KubeApi
from kube.client import make_api_client
from kube.errors import ConfigError
from kube.resources import NAMESPACES


async def test_missing_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        await make_api_client(str(tmp_path / "absent.kubeconfig"))


async def test_malformed_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.kubeconfig"
    path.write_text("this: [is not a kubeconfig")
    with pytest.raises(ConfigError, match="cannot load kubeconfig"):
        await make_api_client(str(path))


async def test_unknown_context_is_a_clear_error(sandbox_apiserver: Any) -> None:
    with pytest.raises(ConfigError, match="cannot load kubeconfig"):
        await make_api_client(str(sandbox_apiserver.kubeconfig), context="no-such-context")


async def test_outside_a_cluster_without_kubeconfig_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    with pytest.raises(ConfigError, match="not running in a cluster"):
        await make_api_client()
    with pytest.raises(ConfigError, match="context"):
        await make_api_client(context="admin")


async def test_a_sandbox_kubeconfig_yields_a_working_client(sandbox_apiserver: Any) -> None:
    api = KubeApi(await make_api_client(str(sandbox_apiserver.kubeconfig)))
    try:
        assert api.client.configuration.host.rstrip("/") == sandbox_apiserver.url.rstrip("/")
        namespaces = await api.list(NAMESPACES)  # authenticated with the kubeconfig's token, over TLS
        assert namespaces["kind"] == "NamespaceList"
    finally:
        await api.close()


async def test_the_session_never_looks_up_netrc_or_proxies_per_request(sandbox_apiserver: Any) -> None:
    client = await make_api_client(str(sandbox_apiserver.kubeconfig))
    try:
        assert client.rest_client.pool_manager.trust_env is False
        assert (await KubeApi(client).list(NAMESPACES))["kind"] == "NamespaceList"
    finally:
        await client.close()


async def _proxy_that_records(first_lines: list[bytes]) -> asyncio.Server:
    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first_lines.append(await reader.readline())
        writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    return await asyncio.start_server(record, "127.0.0.1", 0)


async def test_a_proxy_from_the_environment_is_still_used(
    sandbox_apiserver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_lines: list[bytes] = []
    async with await _proxy_that_records(first_lines) as proxy:
        port = proxy.sockets[0].getsockname()[1]
        for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{port}")
        api = KubeApi(await make_api_client(str(sandbox_apiserver.kubeconfig)))
        try:
            with pytest.raises(Exception):  # noqa: B017 - the recording proxy refuses the tunnel
                await api.list(NAMESPACES)
        finally:
            await api.close()
    host = sandbox_apiserver.url.split("://", 1)[1].rstrip("/")
    assert first_lines and first_lines[0].startswith(f"CONNECT {host} ".encode())


async def test_no_proxy_from_the_environment_is_honoured(
    sandbox_apiserver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_lines: list[bytes] = []
    async with await _proxy_that_records(first_lines) as proxy:
        port = proxy.sockets[0].getsockname()[1]
        monkeypatch.delenv("HTTPS_PROXY", raising=False)
        monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{port}")
        monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
        api = KubeApi(await make_api_client(str(sandbox_apiserver.kubeconfig)))
        try:
            assert (await api.list(NAMESPACES))["kind"] == "NamespaceList"
        finally:
            await api.close()
    assert first_lines == []
