"""make_api_client: a kubeconfig when given, the in-cluster account otherwise, clear errors when neither;
the kubeconfig's ways to trust and authenticate (CA file or data, token, tokenFile, exec, basic auth)."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube.api import KubeApi
from kube.client import make_api_client
from kube.connection import Connection
from kube.errors import ConfigError, ConnectionFailed, Unauthorized, is_retryable
from kube.kubeconfig import load_in_cluster
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
        assert api.client.host == sandbox_apiserver.url.rstrip("/")
        namespaces = await api.list(NAMESPACES)  # authenticated with the kubeconfig's token, over TLS
        assert namespaces["kind"] == "NamespaceList"
    finally:
        await api.close()


async def test_the_session_never_looks_up_netrc_or_proxies_per_request(sandbox_apiserver: Any) -> None:
    client = await make_api_client(str(sandbox_apiserver.kubeconfig))
    try:
        assert client.session.trust_env is False
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


def _kubeconfig(path: Path, server: str, ca_pem: bytes, user: dict[str, Any], **cluster: Any) -> str:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    if ca_pem:
        (path.parent / "ca.crt").write_bytes(ca_pem)
        document["clusters"][0]["cluster"].setdefault("certificate-authority", "ca.crt")  # type: ignore[index]
    path.write_text(yaml.safe_dump(document))
    return str(path)


async def _namespaces(connection: Connection) -> Any:
    return (await KubeApi(connection).list(NAMESPACES))["kind"]


async def test_a_token_file_and_a_ca_file_relative_to_the_kubeconfig(
    sandbox_apiserver: Any, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text(sandbox_apiserver.token + "\n")
    path = _kubeconfig(
        tmp_path / "config", sandbox_apiserver.url, sandbox_apiserver.ca_pem, {"tokenFile": "token"}
    )
    connection = await make_api_client(path)
    try:
        assert await _namespaces(connection) == "NamespaceList"
    finally:
        await connection.close()


async def test_an_untrusted_server_certificate_fails_the_request(
    sandbox_apiserver: Any, tmp_path: Path
) -> None:
    path = _kubeconfig(tmp_path / "config", sandbox_apiserver.url, b"", {"token": sandbox_apiserver.token})
    connection = await make_api_client(path)  # the system's trust store does not know the sandbox CA
    try:
        with pytest.raises(ConnectionFailed, match="certificate verify failed"):
            await _namespaces(connection)
    finally:
        await connection.close()


async def test_in_cluster_token_is_read_again_after_a_401(
    sandbox_apiserver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ca.crt").write_bytes(sandbox_apiserver.ca_pem)
    (tmp_path / "token").write_text("not-the-token")
    host, port = sandbox_apiserver.url.split("://", 1)[1].rstrip("/").rsplit(":", 1)
    environ = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
    monkeypatch.setattr("kube.client.load_in_cluster", lambda: load_in_cluster(environ, str(tmp_path)))
    connection = await make_api_client()
    try:
        with pytest.raises(Unauthorized):
            await _namespaces(connection)
        (tmp_path / "token").write_text(sandbox_apiserver.token)  # the kubelet rotated it
        assert await _namespaces(connection) == "NamespaceList"
    finally:
        await connection.close()


def test_in_cluster_needs_the_service_variables_and_the_account_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not running in a cluster"):
        load_in_cluster({}, str(tmp_path))
    environ = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(ConfigError, match="token"):
        load_in_cluster(environ, str(tmp_path))
    (tmp_path / "token").write_text("t")
    (tmp_path / "ca.crt").write_bytes(b"pem")
    endpoint = load_in_cluster(environ, str(tmp_path))
    assert endpoint.server == "https://[fd00::1]:443"
    assert endpoint.token_file == str(tmp_path / "token") and endpoint.ca_pem == b"pem"


EXEC_PLUGIN = """#!/bin/sh
echo run >> "$0.runs"
expected='{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",'
expected="$expected"'"spec":{"interactive":false}}'
test "$(printf %s "$KUBERNETES_EXEC_INFO" | tr -d ' ')" = "$expected" \
  || { echo "bad KUBERNETES_EXEC_INFO: $KUBERNETES_EXEC_INFO" >&2; exit 3; }
printf '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",'
printf '"status":{"token":"%s","expirationTimestamp":"%s"}}' "$TOKEN" "$EXPIRES"
"""


async def test_an_exec_plugin_token_is_used_until_it_expires(sandbox_apiserver: Any, tmp_path: Path) -> None:
    plugin = tmp_path / "bin" / "credential-plugin"
    plugin.parent.mkdir()
    plugin.write_text(EXEC_PLUGIN)
    plugin.chmod(0o755)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "bin/credential-plugin",  # relative to the kubeconfig's directory
            "env": [{"name": "TOKEN", "value": sandbox_apiserver.token}, {"name": "EXPIRES", "value": ""}],
        }
    }
    path = _kubeconfig(tmp_path / "config", sandbox_apiserver.url, sandbox_apiserver.ca_pem, user)
    connection = await make_api_client(path)
    try:
        for _ in range(3):
            assert await _namespaces(connection) == "NamespaceList"
        assert (tmp_path / "bin" / "credential-plugin.runs").read_text().count("run") == 1
    finally:
        await connection.close()
    # A token past its expiry is fetched again for each request.
    user["exec"]["env"][1]["value"] = "2020-01-01T00:00:00Z"  # type: ignore[index]
    path = _kubeconfig(tmp_path / "config", sandbox_apiserver.url, sandbox_apiserver.ca_pem, user)
    connection = await make_api_client(path)
    try:
        for _ in range(2):
            assert await _namespaces(connection) == "NamespaceList"
        assert (tmp_path / "bin" / "credential-plugin.runs").read_text().count("run") == 3
    finally:
        await connection.close()


async def test_a_failing_exec_plugin_is_a_clear_retryable_error(
    sandbox_apiserver: Any, tmp_path: Path
) -> None:
    user = {"exec": {"command": str(tmp_path / "absent"), "installHint": "install the absent plugin"}}
    path = _kubeconfig(tmp_path / "config", sandbox_apiserver.url, sandbox_apiserver.ca_pem, user)
    connection = await make_api_client(path)
    try:
        with pytest.raises(ConnectionFailed, match="install the absent plugin") as failed:
            await _namespaces(connection)
        assert is_retryable(failed.value)
    finally:
        await connection.close()


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ({"auth-provider": {"name": "oidc"}}, "auth-provider is not supported"),
        ({"client-certificate-data": "bm90IGEgY2VydA=="}, "needs both its certificate and its key"),
        ({"client-certificate": "absent.crt", "client-key": "absent.key"}, "absent.crt"),
        ({"exec": {"args": ["x"]}}, "'command' is missing"),
        ({"token": 42}, "'token' must be a string"),
    ],
)
async def test_unusable_users_are_clear_errors(
    sandbox_apiserver: Any, tmp_path: Path, user: dict[str, Any], message: str
) -> None:
    path = _kubeconfig(tmp_path / "config", sandbox_apiserver.url, sandbox_apiserver.ca_pem, user)
    with pytest.raises(ConfigError, match=message):
        await make_api_client(path)


async def test_basic_auth_and_the_user_agent_are_sent(tmp_path: Path) -> None:
    path = _kubeconfig(
        tmp_path / "config", "https://127.0.0.1:1/", b"", {"username": "ann", "password": "s:cret"}
    )
    connection = await make_api_client(path)
    try:
        assert connection.host == "https://127.0.0.1:1"
        connection.user_agent = "tfgang-test"
        assert await connection.headers("application/json", "application/merge-patch+json") == {
            "Accept": "application/json",
            "User-Agent": "tfgang-test",
            "Content-Type": "application/merge-patch+json",
            "Authorization": "Basic " + base64.b64encode(b"ann:s:cret").decode(),
        }
    finally:
        await connection.close()


def test_the_webhook_never_imports_the_generated_client() -> None:
    # Its models cost the webhook process about 40 MiB and two seconds of start-up.
    code = "import sys, webhook.__main__; print('kubernetes_asyncio' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
