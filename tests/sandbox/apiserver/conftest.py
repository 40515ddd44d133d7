from __future__ import annotations

import json
import os
import ssl
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import config
from kubernetes_asyncio.client import ApiClient, Configuration

from sandbox.testing import ApiServerHandle, start_apiserver

REPO = Path(__file__).resolve().parents[3]
VENV_KUBECTL = REPO / ".venv" / "bin" / "kubectl"
KUBECTL = str(VENV_KUBECTL) if VENV_KUBECTL.exists() else "kubectl"


@dataclass
class Kubectl:
    kubeconfig: str
    cache_dir: str

    def command(self, *args: str) -> list[str]:
        return [KUBECTL, "--kubeconfig", self.kubeconfig, "--cache-dir", self.cache_dir, *args]

    def run(
        self, *args: str, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        command = self.command(*args)
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            input=stdin,
            timeout=60,
            env={**os.environ, "KUBECTL_KUBERC": "false"},
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
        return result

    def popen(self, *args: str) -> subprocess.Popen[str]:
        command = [KUBECTL, "--kubeconfig", self.kubeconfig, "--cache-dir", self.cache_dir, *args]
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def api() -> Iterator[ApiServerHandle]:
    with start_apiserver() as handle:
        yield handle


@pytest.fixture
def kubectl(api: ApiServerHandle, tmp_path: Path) -> Kubectl:
    return Kubectl(api.kubeconfig, str(tmp_path / "kube-cache"))


@pytest.fixture
def seed_yaml() -> str:
    return str(REPO / "examples" / "seed" / "normal.yaml")


@pytest.fixture
async def api_client(api: ApiServerHandle) -> AsyncIterator[ApiClient]:
    configuration = Configuration()
    await config.load_kube_config(config_file=api.kubeconfig, client_configuration=configuration)
    async with ApiClient(configuration=configuration) as client:
        yield client


async def raw_request(
    api: ApiServerHandle,
    method: str,
    path: str,
    body: bytes = b"",
    content_type: str = "application/json",
    token: str | None = None,
    accept: str = "application/json",
) -> tuple[int, Any, dict[str, str]]:
    """One HTTP call with the given headers, for what typed clients cannot send."""
    context = ssl.create_default_context(cadata=api.ca_pem.decode())
    headers = {"Content-Type": content_type, "Accept": accept}
    if token != "":
        headers["Authorization"] = f"Bearer {token or api.token}"
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, api.url + path, data=body, headers=headers, ssl=context) as response,
    ):
        text = await response.text()
        try:
            parsed: Any = json.loads(text)
        except ValueError:
            parsed = text
        return response.status, parsed, dict(response.headers)
