"""Acceptance, slow: the seed's three experiments with their verbatim YAML and the kubelet's 10 s
crash back-off show the transcript's sequences of distinct states (about four minutes)."""

from __future__ import annotations

import pytest

from sandbox.seedreplay import ExperimentRecord
from tests.sandbox.demo.fidelity_checks import SeedFidelityChecks
from tests.sandbox.demo.replaying import replay_seed

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def replays() -> dict[str, ExperimentRecord]:
    records, _printed = replay_seed(1.0, timeout=180)
    return records


class TestVerbatimSeedReplay(SeedFidelityChecks):
    pass
