"""Acceptance: the seed's three experiments with every sleep divided by 5 (30s -> 6s, 10s -> 2s,
15s -> 3s) and a shortened crash back-off show the transcript's sequences of distinct states."""

from __future__ import annotations

import pytest

from sandbox.seedreplay import ExperimentRecord
from tests.sandbox.demo.fidelity_checks import SeedFidelityChecks
from tests.sandbox.demo.replaying import replay_seed

SPEED = 5.0


@pytest.fixture(scope="module")
def replays() -> dict[str, ExperimentRecord]:
    records, _printed = replay_seed(SPEED, timeout=60)
    return records


class TestShortenedSeedReplay(SeedFidelityChecks):
    pass
