"""The commands the benchmarks run, found next to this Python first (the venv's go, py-spy), then on
PATH; a missing one is a ``BenchSetupError`` that says how to install it."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


class BenchSetupError(RuntimeError):
    """Something the bench needs is missing: the message says what and how to get it."""


def tool(name: str) -> str:
    """The path of a command, looked up next to this Python first (the venv's go, py-spy)."""
    found = shutil.which(name, path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        raise BenchSetupError(f"{name!r} is not installed: run `bash bench/setup`")
    return found
