"""The two distributions install the rooms the design names and the console scripts it promises:
tfgang the operator's, tfgang-sandbox the local cluster's, tfgang-realcluster the real components'."""

from __future__ import annotations

import importlib
import importlib.metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOMS = [
    "kubeobjects", "tfjob", "kube", "certs", "webhook", "controller",
    "sandbox", "realcluster", "kubectl_tfjob",
]
SCRIPTS = {
    "tfgang": {"tfgang-certs", "tfgang-webhook", "tfgang-controller", "kubectl-tfjob"},
    "tfgang-sandbox": {"tfgang-sandbox"},
}


@pytest.mark.parametrize("room", ROOMS)
def test_every_room_is_importable(room: str) -> None:
    assert importlib.import_module(room).__doc__


@pytest.mark.parametrize("distribution", sorted(SCRIPTS))
def test_console_scripts_are_declared(distribution: str) -> None:
    entry_points = importlib.metadata.entry_points(group="console_scripts")
    names = {ep.name for ep in entry_points if ep.dist is not None and ep.dist.name == distribution}
    assert names == SCRIPTS[distribution]


def test_the_operator_stands_on_the_named_libraries_at_run_time() -> None:
    # HTTP both ways, credentials and API calls, certificates: the packages the project was
    # specified with, installed with the operator, not only with its tests.
    requirements = [Requirement(text) for text in importlib.metadata.requires("tfgang") or []]
    runtime = {
        canonicalize_name(requirement.name)
        for requirement in requirements
        if requirement.marker is None or "extra" not in str(requirement.marker)
    }
    assert {"aiohttp", "kubernetes-asyncio", "cryptography"} <= runtime
