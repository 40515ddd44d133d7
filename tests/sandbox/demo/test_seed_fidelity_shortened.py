"""Acceptance: the seed's three experiments with every sleep divided by 5 (30s -> 6s, 10s -> 2s,
15s -> 3s) and a shortened crash back-off show the transcript's sequences of distinct states, on
the sandbox API server and on a real kube-apiserver."""

from __future__ import annotations

import pytest

from sandbox.seedreplay import ExperimentRecord
from tests.apiservers import API_SERVERS
from tests.sandbox.demo.fidelity_checks import SeedFidelityChecks
from tests.sandbox.demo.replaying import replay_seed

SPEED = 5.0


@pytest.fixture(scope="module", params=API_SERVERS)
def replays(request: pytest.FixtureRequest) -> dict[str, ExperimentRecord]:
    records, _printed = replay_seed(SPEED, timeout=60, apiserver=request.param)
    return records


class TestShortenedSeedReplay(SeedFidelityChecks):
    pass
