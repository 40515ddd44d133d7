"""Run the seed experiments on a fresh local cluster, as the demo does, and keep what kubectl showed."""

from __future__ import annotations

from realcluster.kubectl import find_kubectl
from sandbox.backends import SANDBOX
from sandbox.cluster import ClusterOptions, start_cluster
from sandbox.seedreplay import (
    EXPERIMENTS,
    ExperimentRecord,
    SeedReplay,
    backoff_base_for,
    seed_dir,
    shorten_manifest,
)
from tests.sandbox.demo.fidelity import EXPERIMENT_ORDER


def replay_seed(
    speed: float, timeout: float, apiserver: str = SANDBOX
) -> tuple[dict[str, ExperimentRecord], list[str]]:
    """Each experiment's record, and every line the replay printed (for failure messages), on a
    cluster whose API server is ``apiserver`` (``sandbox.backends.KINDS``)."""
    manifests = {
        name: shorten_manifest((seed_dir() / f"{name}.yaml").read_text(encoding="utf-8"), speed)
        for name in EXPERIMENT_ORDER
    }
    printed: list[str] = []
    records: dict[str, ExperimentRecord] = {}
    options = ClusterOptions(operator=True, backoff_base=backoff_base_for(speed), apiserver=apiserver)
    with start_cluster(options) as handle:

        async def replay_all() -> None:
            async with SeedReplay(handle.cluster, find_kubectl(), printed.append, timeout=timeout) as seed:
                for name in EXPERIMENT_ORDER:
                    records[name] = await seed.run(EXPERIMENTS[name], manifests[name], f"{name}.yaml")
                    await seed.delete_job(manifests[name])

        handle.call(replay_all(), timeout=len(EXPERIMENT_ORDER) * (timeout + 90))
    return records, printed
