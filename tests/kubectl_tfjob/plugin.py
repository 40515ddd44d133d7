"""Running the plugin as users do: the ``kubectl-tfjob`` console script, or ``kubectl tfjob`` through
real kubectl's plugin discovery with the venv's bin directory on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
SEED_DIR = REPO / "examples" / "seed"


def _env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.update(extra or {})
    return env


def _run(
    argv: list[str], stdin: str | None, env: Mapping[str, str] | None, timeout: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=_env(env), timeout=timeout, check=False
    )


def plugin(
    *args: str, stdin: str | None = None, env: Mapping[str, str] | None = None, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """``kubectl-tfjob ARGS`` (the console script itself)."""
    return _run([str(BIN / "kubectl-tfjob"), *args], stdin, env, timeout)


def kubectl_binary() -> str:
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    return shutil.which("kubectl", path=path) or str(BIN / "kubectl")


def via_kubectl(
    *args: str, stdin: str | None = None, env: Mapping[str, str] | None = None, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """``kubectl tfjob ARGS``: kubectl finds ``kubectl-tfjob`` on PATH and runs it."""
    return _run([kubectl_binary(), "tfjob", *args], stdin, env, timeout)
