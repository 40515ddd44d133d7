from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox.testing import ApiServerHandle, start_apiserver

REPO = Path(__file__).resolve().parents[3]
VENV_KUBECTL = REPO / ".venv" / "bin" / "kubectl"
KUBECTL = str(VENV_KUBECTL) if VENV_KUBECTL.exists() else "kubectl"


@dataclass
class Kubectl:
    kubeconfig: str
    cache_dir: str

    def run(
        self, *args: str, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        command = [KUBECTL, "--kubeconfig", self.kubeconfig, "--cache-dir", self.cache_dir, *args]
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
