"""The one-node cluster for the tests of this folder (mark ``real_node``): started once per
session from ``$TFGANG_REAL_COMPONENTS`` and ``$TFGANG_REAL_IMAGES`` (built by the scripts when
unset; a build that fails or lacks a component fails the tests, it never skips them), and tfgang
installed on it with the real helm binary as the README says (``tfgang_installed``)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from realcluster.onenode import OneNode, find_images, start_one_node
from realcluster.volcano import find_components

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "tfgang"
RELEASE = "tfgang"
RELEASE_NAMESPACE = "tfgang"
# The images scripts/real-images builds, as the chart is told to run them (never pulled).
TFGANG_IMAGE = ("tfgang", "0.1.0")
KUBECTL_IMAGE = ("localhost/kubectl", "1.37.2")


@pytest.fixture(scope="session")
def one_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OneNode]:
    components, images = find_components(), find_images()
    with start_one_node(components, images, tmp_path_factory.mktemp("one-node")) as node:
        yield node


@dataclass(frozen=True)
class Release:
    node: OneNode
    name: str
    namespace: str
    install_seconds: float

    def helm(self, *args: str, timeout: float = 600.0) -> str:
        return run_helm(self.node, *args, timeout=timeout)


def run_helm(node: OneNode, *args: str, timeout: float = 600.0) -> str:
    helm = str(node.node.components / "bin" / "helm")
    done = subprocess.run(
        [helm, "--kubeconfig", node.kubeconfig, *args], capture_output=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode()


def install_arguments() -> list[str]:
    """README's ``helm install``, with the locally built images and a pull policy that never pulls."""
    return [
        "--set", f"image.repository={TFGANG_IMAGE[0]}", "--set", f"image.tag={TFGANG_IMAGE[1]}",
        "--set", "image.pullPolicy=Never",
        "--set", f"helmTest.image.repository={KUBECTL_IMAGE[0]}",
        "--set", f"helmTest.image.tag={KUBECTL_IMAGE[1]}",
        "--set", "helmTest.image.pullPolicy=Never",
    ]  # fmt: skip


@pytest.fixture(scope="session")
def tfgang_installed(one_node: OneNode) -> Release:
    """tfgang installed by ``helm install ... --wait``: its webhook and controller pods Ready."""
    started = time.monotonic()
    run_helm(
        one_node, "install", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE, "--create-namespace",
        *install_arguments(), "--wait", "--timeout", "5m",
    )  # fmt: skip
    return Release(one_node, RELEASE, RELEASE_NAMESPACE, time.monotonic() - started)
