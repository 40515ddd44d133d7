"""make_api_client: a kubeconfig when given, the in-cluster account otherwise, clear errors when neither."""

from __future__ import annotations

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
