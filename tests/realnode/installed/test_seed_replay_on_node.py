"""Acceptance: the seed's three experiments in real containers, under the helm-installed tfgang, the
real Volcano and the kubelet, watched with the pinned kubectl, show the transcript's sequences of
distinct states, by the same checks as the sandbox's replays (``SeedFidelityChecks``).

The sleeps are the transcript's own (the kubelet's crash back-off, 10 s doubling, is not shortened
as the sandbox's node agent's is, and it is what orders the restarts); each pod asks 250m of CPU
instead of 1 (``fit_cpu``: the node has the machine's 2 cores, the transcript's had 4 free).
``tfgang-sandbox demo --apiserver node`` shows the same replay.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from pathlib import Path

import pytest

from realcluster.helmrelease import Release
from realcluster.onenode import OneNode
from sandbox.nodebackend import NodeReplayCluster
from sandbox.seedreplay import EXPERIMENTS, ExperimentRecord, SeedReplay, fit_cpu, seed_dir
from tests.sandbox.demo.fidelity import EXPERIMENT_ORDER
from tests.sandbox.demo.fidelity_checks import SeedFidelityChecks

pytestmark = [pytest.mark.real_node, pytest.mark.timeout(900)]

TRANSCRIPT_NODE = "las1"
TIMEOUT = 240.0
"""Seconds each experiment may take to reach its final state (the transcript's take about 70)."""


@pytest.fixture(scope="module")
def replays(
    one_node: OneNode, tfgang: Release, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, ExperimentRecord]:
    cluster = NodeReplayCluster(one_node, tmp_path_factory.mktemp("seed-replay"))
    manifests = {
        name: fit_cpu((seed_dir() / f"{name}.yaml").read_text(encoding="utf-8")) for name in EXPERIMENT_ORDER
    }
    records: dict[str, ExperimentRecord] = {}
    printed: list[str] = []

    async def replay_all() -> None:
        async with SeedReplay(cluster, str(tfgang.kubectl), printed.append, timeout=TIMEOUT) as seed:
            for name in EXPERIMENT_ORDER:
                records[name] = await seed.run(EXPERIMENTS[name], manifests[name], f"{name}.yaml")
                await seed.delete_job(manifests[name])

    try:
        asyncio.run(replay_all())
    finally:
        Path(tmp_path_factory.getbasetemp() / "seed-replay-on-node.txt").write_text("\n".join(printed))
    node = json.loads(one_node.kubectl("get", "nodes", "-o", "json"))["items"][0]["metadata"]["name"]
    return {name: on_the_transcripts_node(record, node) for name, record in records.items()}


def on_the_transcripts_node(record: ExperimentRecord, node: str) -> ExperimentRecord:
    """The record with the node's name in the pod watch's NODE column as the transcript's, ``las1``:
    the one node of either cluster, named by whoever made it."""
    pods = [
        re.sub(rf"(?<=\s){re.escape(node)}(?=\s)", TRANSCRIPT_NODE, line) for line in record.streams["po"]
    ]
    return dataclasses.replace(record, streams={**record.streams, "po": pods})


class TestSeedReplayOnNode(SeedFidelityChecks):
    real_node = True
