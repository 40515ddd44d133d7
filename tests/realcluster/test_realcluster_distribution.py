"""realcluster sits below the sandbox: the sandbox's distribution needs it, never the other way
round (that it lists every package of its folder is checked beside the sandbox's, in
tests/chart/test_dockerfile.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_sandbox_needs_the_real_cluster_and_not_the_other_way_round() -> None:
    sandbox = tomllib.loads((ROOT / "sandbox" / "pyproject.toml").read_text())["project"]["dependencies"]
    realcluster = tomllib.loads((ROOT / "realcluster" / "pyproject.toml").read_text())["project"]
    assert "tfgang-realcluster==0.1.0" in sandbox
    assert realcluster["name"] == "tfgang-realcluster"
    assert not [req for req in realcluster["dependencies"] if req.startswith("tfgang-sandbox")]
