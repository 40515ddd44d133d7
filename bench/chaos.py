"""Chaos figures: every scenario of ``tests/chaos/scenarios.py``, N times, for ``docs/reliability.md``.

Run: ``python bench/chaos.py [--runs 3] [--storm-jobs 20] [--storm-kills 8] [--no-write]``. Each run of
each scenario gets a fresh local cluster (``sandbox.cluster``: the sandbox API server, scheduler,
node agent, webhook and controller as processes) and its own random seed. The report is printed;
its figures are carried into docs/reliability.md's tables by hand (``bench/perfdoc.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from perfdoc import section_markers, write_section  # noqa: E402

from sandbox.cluster import LocalCluster  # noqa: E402
from tests.chaos import scenarios  # noqa: E402
from tests.chaos.scenarios import ChaosCluster, Figures  # noqa: E402

DOC = REPO / "docs" / "reliability.md"
MARK_BEGIN, MARK_END = section_markers("chaos")


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str
    run: Callable[[ChaosCluster, random.Random], Awaitable[Figures]]
    leader_election: bool = False


def catalogue(storm_jobs: int, storm_kills: int) -> list[Scenario]:
    return [
        Scenario(
            "controller kill -9",
            f"{storm_jobs} jobs at once; the controller SIGKILLed {storm_kills} times at random moments "
            "0.3-2.5 s apart and restarted at once",
            lambda c, r: scenarios.kill_storm(c, r, jobs=storm_jobs, kills=storm_kills),
        ),
        Scenario(
            "API outage + 410 storm",
            "8 jobs; once one runs, the API server refuses and drops every connection for 6 s, then "
            "drops every watch with its history compacted three times",
            lambda c, r: scenarios.api_outage(c, r, jobs=8, outage=6.0, storms=3),
        ),
        Scenario(
            "webhook outage",
            "a job is created and the webhook SIGKILLed at once (failurePolicy Fail) for 6 s",
            lambda c, r: scenarios.webhook_outage(c, r, away=6.0),
        ),
        Scenario(
            "leader failover",
            "two controllers, Lease 4 s / renew deadline 3 s / retry 0.5 s; the leader SIGKILLed "
            "mid-run with 6 jobs",
            lambda c, r: scenarios.leader_failover(c, r, jobs=6),
            leader_election=True,
        ),
        Scenario(
            "certificate rotation",
            "3 TFJob dry-run creates in flight at all times (each reviewed by the webhook); new CA and "
            "serving certificate three times: caBundle trusts both, files replaced, old CA dropped",
            lambda c, r: scenarios.certificate_rotation(c, r, rotations=3),
        ),
    ]


async def run_all(runs: int, storm_jobs: int, storm_kills: int) -> dict[str, list[Figures]]:
    results: dict[str, list[Figures]] = {}
    for scenario in catalogue(storm_jobs, storm_kills):
        for index in range(runs):
            flags = scenarios.LEADER_FLAGS if scenario.leader_election else ()
            async with LocalCluster(scenarios.cluster_options(controller_flags=flags)) as cluster:
                seed = random.Random(1000 * index + len(results))
                figures = await scenario.run(scenarios.SandboxCluster(cluster), seed)
            print(f"{scenario.name} #{index + 1}: {figures}", flush=True)
            results.setdefault(scenario.name, []).append(figures)
    return results


def _span(values: list[float]) -> str:
    if not values:
        return "-"
    low, high = min(values), max(values)
    return f"{low:.1f}" if round(low, 1) == round(high, 1) else f"{low:.1f}-{high:.1f}"


def render(results: dict[str, list[Figures]], runs: int, storm_jobs: int, storm_kills: int) -> str:
    lines = [
        MARK_BEGIN,
        "## Chaos",
        "",
        f"`python bench/chaos.py --runs {runs} --storm-jobs {storm_jobs} --storm-kills {storm_kills}` on "
        f"{os.cpu_count()} cores ({platform.python_implementation()} {platform.python_version()}), "
        f"{time.strftime('%Y-%m-%d', time.gmtime())}. Each run is a fresh sandbox cluster with the "
        "operator; the jobs' workers really run (`sleep` 1-10 s) on the sandbox node agent. "
        "Duplicates are counted as distinct uids ever seen per object name (pods, services, PodGroups), "
        "watched from before the first job; lost jobs are jobs not Succeeded at the end; "
        "ever Failed counts jobs that showed a Failed condition at any moment. The same scenarios, "
        "smaller, run in CI as `tests/chaos` (`pytest -m chaos`).",
        "",
        "| scenario | runs | jobs | kills | lost | ever Failed | duplicates | takeover / recovery s "
        "| requests (failed) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for scenario in catalogue(storm_jobs, storm_kills):
        figures = results.get(scenario.name, [])
        if not figures:
            continue
        seconds = [f.takeover_seconds for f in figures if f.takeover_seconds is not None]
        seconds += [f.recovery_seconds for f in figures if f.recovery_seconds is not None]
        requests = sum(f.requests for f in figures)
        lines.append(
            f"| {scenario.name} | {len(figures)} | {sum(f.jobs for f in figures)} | "
            f"{sum(f.kills for f in figures)} | {sum(f.lost for f in figures)} | "
            f"{sum(f.ever_failed for f in figures)} | {sum(f.duplicates for f in figures)} | "
            f"{_span(seconds)} | "
            + (f"{requests} ({sum(f.failed_requests for f in figures)})" if requests else "-")
            + " |"
        )
    lines += ["", "What each scenario does:", ""]
    lines += [f"- **{scenario.name}**: {scenario.what}." for scenario in catalogue(storm_jobs, storm_kills)]
    lines += [
        "",
        "Takeover is from the leader's SIGKILL to the standby reporting `tfgang_controller_is_leader 1`, "
        f"against a {scenarios.LEASE_SECONDS:.0f} s lease; recovery is from the webhook's return to the "
        "job's first pod. In the failover runs no write to the jobs' objects came from the old leader "
        "after the new one had started writing (checked in the request log).",
        "",
        "The node agent's outage behaviour is covered by `tests/chaos/test_node_agent_outage.py`: a pod "
        "that finishes during a 6 s outage is reported Succeeded once the API server is back, and under "
        "50% failing requests its restart counts land in order.",
        MARK_END,
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--storm-jobs", type=int, default=20)
    parser.add_argument("--storm-kills", type=int, default=8)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/reliability.md")
    args = parser.parse_args()
    results = asyncio.run(run_all(args.runs, args.storm_jobs, args.storm_kills))
    section = render(results, args.runs, args.storm_jobs, args.storm_kills)
    print(section)
    if not args.no_write:
        if not DOC.exists():
            DOC.write_text("# Reliability\n")
        write_section(DOC, "chaos", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
