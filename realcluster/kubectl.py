"""Which kubectl binary to run: the one a caller names, the venv's, else the one on PATH."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

__all__ = ["KubectlError", "find_kubectl"]


class KubectlError(RuntimeError):
    """kubectl is missing or a command failed."""


def find_kubectl(explicit: str | None = None) -> str:
    """``explicit``, else the one next to this Python (the venv's), else the one on PATH."""
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise KubectlError(f"kubectl {explicit!r} is not an executable file")
        return explicit
    beside = Path(sys.executable).parent / "kubectl"
    if os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("kubectl")
    if found is None:
        raise KubectlError("kubectl not found: install it (./scripts/setup does) or pass --kubectl")
    return found
