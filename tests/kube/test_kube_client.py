"""make_api_client: a kubeconfig when given, the in-cluster account otherwise, clear errors when neither;
the kubeconfig's ways to trust and authenticate (CA file, token, tokenFile, exec, basic auth), all
loaded by kubernetes_asyncio, and what we rely on it for: credentials kept current, one session."""

from __future__ import annotations

import asyncio
import base64
import datetime
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.config import incluster_config

from kube.api import KubeApi
from kube.client import KubeClient, make_api_client
from kube.errors import ConfigError, ConnectionFailed, Unauthorized
from kube.resources import NAMESPACES
from tests.kube.conftest import kubeconfig_file


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
        # One session for the process, the ApiClient's own, that never asks the environment per request.
        assert client.api_client.rest_client.pool_manager is client.session
        assert client.session.trust_env is False
        assert "proxy" not in client.request_options
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


def _no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)


async def test_a_proxy_from_the_environment_is_used_and_no_proxy_honoured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_lines: list[bytes] = []
    async with await _proxy_that_records(first_lines) as proxy:
        port = proxy.sockets[0].getsockname()[1]
        _no_proxy_variables(monkeypatch)
        monkeypatch.setenv("https_proxy", f"127.0.0.1:{port}")  # no scheme: http://, as kubectl reads it
        monkeypatch.setenv("NO_PROXY", "10.0.0.0/8, .internal,apiserver.example:8443")

        async def proxied(server: str) -> str | None:
            client = await make_api_client(kubeconfig_file(tmp_path / "config", server, b"", {"token": "t"}))
            try:
                return client.request_options.get("proxy")
            finally:
                await client.close()

        assert await proxied("https://10.1.2.3:6443") is None  # in the CIDR
        assert await proxied("https://api.cluster.internal:6443") is None  # a subdomain of the host entry
        assert await proxied("https://apiserver.example:8443") is None  # host and port
        assert await proxied("https://127.0.0.1:6443") is None  # loopback: never, as kubectl
        assert await proxied("https://11.1.2.3:6443") == f"http://127.0.0.1:{port}"
        assert await proxied("https://apiserver.example:6443") == f"http://127.0.0.1:{port}"
        # And the proxy chosen is the one the requests go through: a CONNECT tunnel to the server.
        api = KubeApi(
            await make_api_client(
                kubeconfig_file(tmp_path / "config", "https://apiserver.example:6443", b"", {"token": "t"})
            )
        )
        try:
            with pytest.raises(ConnectionFailed):  # the recording proxy refuses the tunnel
                await api.list(NAMESPACES)
        finally:
            await api.close()
    assert first_lines and first_lines[0].startswith(b"CONNECT apiserver.example:6443 ")


async def test_the_kubeconfig_proxy_url_wins_over_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_proxy_variables(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    path = kubeconfig_file(
        tmp_path / "config",
        "https://10.1.2.3:6443",
        b"",
        {"token": "t"},
        **{"proxy-url": "http://u:p@kc-proxy:3128"},
    )
    client = await make_api_client(path)
    try:
        assert client.request_options["proxy"] == "http://u:p@kc-proxy:3128"
        assert client.request_options["proxy_headers"] == {
            "Proxy-Authorization": "Basic " + base64.b64encode(b"u:p").decode()
        }
    finally:
        await client.close()


async def _namespaces(client: KubeClient) -> Any:
    return (await KubeApi(client).list(NAMESPACES))["kind"]


async def test_a_token_file_and_a_ca_file_relative_to_the_kubeconfig(
    sandbox_apiserver: Any, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text(sandbox_apiserver.token + "\n")  # as `echo` writes it
    (tmp_path / "ca.crt").write_bytes(sandbox_apiserver.ca_pem)
    path = kubeconfig_file(
        tmp_path / "config",
        sandbox_apiserver.url,
        b"",
        {"tokenFile": "token"},
        **{"certificate-authority": "ca.crt"},
    )
    client = await make_api_client(path)
    try:
        assert await _namespaces(client) == "NamespaceList"
    finally:
        await client.close()


async def test_a_token_file_is_read_again_once_a_period_and_after_a_401(
    sandbox_apiserver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kube.client.RELOAD_PERIOD", 2.0)  # a minute in production, client-go's
    token = tmp_path / "token"
    token.write_text("not-the-token")
    path = kubeconfig_file(
        tmp_path / "config", sandbox_apiserver.url, sandbox_apiserver.ca_pem, {"tokenFile": str(token)}
    )
    client = await make_api_client(path)
    try:
        with pytest.raises(Unauthorized):
            await _namespaces(client)
        token.write_text(sandbox_apiserver.token)  # rotated: the 401 has the kubeconfig loaded again
        assert await _namespaces(client) == "NamespaceList"
        token.write_text("revoked")
        assert await _namespaces(client) == "NamespaceList", "within the period the token held is sent"
        await asyncio.sleep(2.0)
        with pytest.raises(Unauthorized):
            await _namespaces(client)
    finally:
        await client.close()


async def test_an_untrusted_server_certificate_fails_the_request(
    sandbox_apiserver: Any, tmp_path: Path
) -> None:
    path = kubeconfig_file(
        tmp_path / "config", sandbox_apiserver.url, b"", {"token": sandbox_apiserver.token}
    )
    client = await make_api_client(path)  # the system's trust store does not know the sandbox CA
    try:
        with pytest.raises(ConnectionFailed, match="certificate verify failed"):
            await _namespaces(client)
    finally:
        await client.close()


def _in_cluster(monkeypatch: pytest.MonkeyPatch, directory: Path, host: str, port: str) -> None:
    """The service account's files and variables where the library's in-cluster loader reads them."""
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(directory / "token"))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(directory / "ca.crt"))


async def test_in_cluster_config_reads_the_projected_token_again_as_it_rotates(
    sandbox_apiserver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The library reads the file again once its period is over: a minute (client-go's); no read on 401.
    monkeypatch.setattr(incluster_config, "TOKEN_REFRESH_PERIOD", datetime.timedelta(seconds=2))
    (tmp_path / "ca.crt").write_bytes(sandbox_apiserver.ca_pem)
    (tmp_path / "token").write_text(sandbox_apiserver.token)
    host, port = sandbox_apiserver.url.split("://", 1)[1].rstrip("/").rsplit(":", 1)
    _in_cluster(monkeypatch, tmp_path, host, port)
    client = await make_api_client()
    try:
        assert client.host == sandbox_apiserver.url.rstrip("/")
        assert await _namespaces(client) == "NamespaceList"
        (tmp_path / "token").write_text("rotated-away")
        assert await _namespaces(client) == "NamespaceList", "within the period the token held is sent"
        await asyncio.sleep(2.0)
        with pytest.raises(Unauthorized):
            await _namespaces(client)
        (tmp_path / "token").write_text(sandbox_apiserver.token)  # the kubelet rotated it
        await asyncio.sleep(2.0)
        assert await _namespaces(client) == "NamespaceList"
    finally:
        await client.close()


async def test_in_cluster_needs_the_service_variables_and_the_account_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _in_cluster(monkeypatch, tmp_path, "fd00::1", "443")
    with pytest.raises(ConfigError, match=r"not running in a cluster.*token"):
        await make_api_client()
    (tmp_path / "token").write_text("t")
    (tmp_path / "ca.crt").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"not running in a cluster.*empty"):
        await make_api_client()
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT")
    with pytest.raises(ConfigError, match="not running in a cluster"):
        await make_api_client()


EXEC_PLUGIN = """#!/bin/sh
echo run >> "$0.runs"
expected='{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",'
expected="$expected"'"spec":{"interactive":false}}'
test "$(printf %s "$KUBERNETES_EXEC_INFO" | tr -d ' ')" = "$expected" \\
  || { echo "bad KUBERNETES_EXEC_INFO: $KUBERNETES_EXEC_INFO" >&2; exit 3; }
printf '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",'
if test -n "$EXPIRES"; then
  printf '"status":{"token":"%s","expirationTimestamp":"%s"}}' "$(cat "$TOKEN_FILE")" "$EXPIRES"
else
  printf '"status":{"token":"%s"}}' "$(cat "$TOKEN_FILE")"
fi
"""


def _exec_user(tmp_path: Path, expires: str) -> dict[str, Any]:
    plugin = tmp_path / "credential-plugin"
    plugin.write_text(EXEC_PLUGIN)
    plugin.chmod(0o755)
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": str(plugin),
            "env": [
                {"name": "TOKEN_FILE", "value": str(tmp_path / "plugin-token")},
                {"name": "EXPIRES", "value": expires},
            ],
        }
    }


def _runs(tmp_path: Path) -> int:
    return (tmp_path / "credential-plugin.runs").read_text().count("run")


async def test_an_exec_plugin_token_is_used_until_it_expires(sandbox_apiserver: Any, tmp_path: Path) -> None:
    (tmp_path / "plugin-token").write_text(sandbox_apiserver.token)
    later = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    path = kubeconfig_file(
        tmp_path / "config", sandbox_apiserver.url, sandbox_apiserver.ca_pem, _exec_user(tmp_path, later)
    )
    client = await make_api_client(path)
    try:
        for _ in range(3):
            assert await _namespaces(client) == "NamespaceList"
        assert _runs(tmp_path) == 1
    finally:
        await client.close()
    # A token past its expiry (the library counts 5 minutes early) is fetched again for each request.
    path = kubeconfig_file(
        tmp_path / "config",
        sandbox_apiserver.url,
        sandbox_apiserver.ca_pem,
        _exec_user(tmp_path, "2020-01-01T00:00:00Z"),
    )
    client = await make_api_client(path)
    try:
        for _ in range(2):
            assert await _namespaces(client) == "NamespaceList"
        assert _runs(tmp_path) == 1 + 3
    finally:
        await client.close()


async def test_an_exec_plugin_runs_again_after_a_401(sandbox_apiserver: Any, tmp_path: Path) -> None:
    (tmp_path / "plugin-token").write_text("not-the-token")
    path = kubeconfig_file(
        tmp_path / "config", sandbox_apiserver.url, sandbox_apiserver.ca_pem, _exec_user(tmp_path, "")
    )
    client = await make_api_client(path)
    try:
        with pytest.raises(Unauthorized):
            await _namespaces(client)
        (tmp_path / "plugin-token").write_text(sandbox_apiserver.token)
        assert await _namespaces(client) == "NamespaceList"
        assert await _namespaces(client) == "NamespaceList"
        assert _runs(tmp_path) == 2  # at the start and once after the 401; not per request
    finally:
        await client.close()


async def test_an_exec_plugin_run_counts_in_the_requests_time_limit(
    sandbox_apiserver: Any, tmp_path: Path
) -> None:
    (tmp_path / "plugin-token").write_text(sandbox_apiserver.token)
    path = kubeconfig_file(
        tmp_path / "config", sandbox_apiserver.url, sandbox_apiserver.ca_pem, _exec_user(tmp_path, "")
    )
    api = KubeApi(await make_api_client(path), qps=0, request_timeout=1.0)
    try:
        api.client.rejected()  # the next request runs the plugin again
        (tmp_path / "credential-plugin").write_text("#!/bin/sh\nsleep 3\n" + EXEC_PLUGIN.split("\n", 1)[1])
        started = time.monotonic()
        with pytest.raises(ConnectionFailed, match="TimeoutError"):
            await api.list(NAMESPACES)
        assert time.monotonic() - started < 2.0, "a 1 s request waited for the whole plugin run"
    finally:
        await api.close()


async def test_a_failing_exec_plugin_is_a_clear_error(sandbox_apiserver: Any, tmp_path: Path) -> None:
    user = {
        "exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(tmp_path / "absent")}
    }
    path = kubeconfig_file(tmp_path / "config", sandbox_apiserver.url, sandbox_apiserver.ca_pem, user)
    with pytest.raises(ConfigError, match="absent"):
        await make_api_client(path)


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ({"auth-provider": {"name": "oidc"}}, "oidc: missing configuration"),
        ({"client-certificate-data": "bm90IGEgY2VydA=="}, "TLS settings"),
        ({"client-certificate": "absent.crt", "client-key": "absent.key"}, "absent.crt"),
        (
            {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "args": ["x"]}},
            "missing key 'command'",
        ),
    ],
)
async def test_unusable_users_are_clear_errors(
    sandbox_apiserver: Any, tmp_path: Path, user: dict[str, Any], message: str
) -> None:
    path = kubeconfig_file(tmp_path / "config", sandbox_apiserver.url, sandbox_apiserver.ca_pem, user)
    with pytest.raises(ConfigError, match=message):
        await make_api_client(path)


async def test_basic_auth_and_the_user_agent_are_sent(tmp_path: Path) -> None:
    path = kubeconfig_file(
        tmp_path / "config", "https://127.0.0.1:1/", b"", {"username": "ann", "password": "s:cret"}
    )
    client = await make_api_client(path)
    try:
        assert client.host == "https://127.0.0.1:1"
        client.user_agent = "tfgang-test"
        assert await client.headers("application/json", "application/merge-patch+json") == {
            "Accept": "application/json",
            "User-Agent": "tfgang-test",
            "Accept-Encoding": "identity",
            "Content-Type": "application/merge-patch+json",
            "authorization": "Basic " + base64.b64encode(b"ann:s:cret").decode(),
        }
    finally:
        await client.close()
