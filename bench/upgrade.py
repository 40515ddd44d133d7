"""Upgrade, rotate and fail over under load: the upgrade rig (``tests/chaos/upgrade_rig.py``), N runs.

Run: ``python bench/upgrade.py [--runs 3] [--rate 60] [--min-creations 10000] [--bin-dir DIR]
[--shutdown-delay 5] [--workdir DIR] [--no-write]``. Needs
Debian's ``haproxy`` and a kube-apiserver: ``--bin-dir`` holds etcd, kube-apiserver and
kube-controller-manager (any release the rig runs on); without it, ``scripts/kube-apiserver build``
makes v1.20 (cached). Each run starts everything afresh. It prints each run's table; the figures are
carried into docs/reliability.md's tables by hand (``bench/perfdoc.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from perfdoc import section_markers, write_section  # noqa: E402

from tests.chaos.upgrade_rig import (  # noqa: E402
    HEALTH_INTERVAL,
    RigOptions,
    RunFigures,
    cut_by_sigkill,
    run_sequence,
    running_rig,
    unexplained,
)

DOC = REPO / "docs" / "reliability.md"
MARK_BEGIN, MARK_END = section_markers("upgrade")


async def run_all(runs: int, options: RigOptions) -> list[RunFigures]:
    results = []
    for index in range(runs):
        workdir = options.workdir / f"run-{index + 1}" if options.workdir else None
        run_options = RigOptions(**{**options.__dict__, "workdir": workdir})
        async with running_rig(run_options) as rig:
            figures = await run_sequence(rig)
        print(render_run(figures, index + 1), flush=True)
        results.append(figures)
    return results


def _version(bin_dir: Path | None) -> str:
    if bin_dir is None:
        return "v1.20 (scripts/kube-apiserver)"
    with_version = subprocess.run(
        [str(bin_dir / "kube-apiserver"), "--version"], capture_output=True, text=True, check=False
    )
    return with_version.stdout.strip().removeprefix("Kubernetes ") or "?"


def render_run(figures: RunFigures, number: int) -> str:
    rate = figures.creations / figures.seconds if figures.seconds else 0.0
    lines = [
        f"Run {number}: {figures.creations:,} pod creations in {figures.seconds:.0f} s ({rate:.1f}/s); "
        f"{figures.failed} failed, {figures.timed_out} timed out, {figures.not_mutated} not mutated"
        f" ({sum(cut_by_sigkill(figures, record) for record in figures.records)} of them in flight on "
        "the replica killed -9).",
        "",
        "| step | creations | failed | timed out | not mutated | waits for kube-apiserver "
        "| longest create ms | seconds | what happened |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for step in figures.steps:
        lines.append(
            f"| {step.name} | {step.creations:,} | {step.failed} | {step.timed_out} | {step.not_mutated} | "
            f"{step.api_waits} | {step.longest_seconds * 1000:.0f} | {step.seconds:.0f} | "
            + ("; ".join(step.notes) or "-")
            + " |"
        )
    errors = [error for step in figures.steps for error in step.errors]
    if errors:
        lines += ["", "Errors (first of each step):", ""] + [f"- `{error}`" for error in errors]
    return "\n".join(lines)


def render(results: list[RunFigures], options: RigOptions, version: str) -> str:
    total = sum(figures.creations for figures in results)
    lines = [
        MARK_BEGIN,
        f"`python bench/upgrade.py --runs {len(results)} --rate {options.rate:g} "
        f"--min-creations {options.min_creations} --shutdown-delay {options.shutdown_delay:g}` on "
        f"{os.cpu_count()} cores ({platform.python_implementation()} {platform.python_version()}), "
        f"kube-apiserver {version}, {time.strftime('%Y-%m-%d', time.gmtime())}: {total:,} pod creations, "
        f"{sum(f.failed for f in results)} failed, {sum(f.timed_out for f in results)} timed out, "
        f"{sum(f.not_mutated for f in results)} not mutated. haproxy checks `/readyz` every "
        f"{HEALTH_INTERVAL:g} s (fall 1, rise 1).",
        "",
    ]
    for number, figures in enumerate(results, 1):
        lines += [render_run(figures, number), ""]
    lines.append(MARK_END)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate", type=float, default=60.0, help="pod creations started per second")
    parser.add_argument("--min-creations", type=int, default=10_000)
    parser.add_argument("--settle", type=float, default=10.0, help="seconds of load after each step's action")
    parser.add_argument("--shutdown-delay", type=float, default=5.0, help="the replicas' --shutdown-delay")
    parser.add_argument(
        "--bin-dir", type=Path, default=None, help="etcd, kube-apiserver, kube-controller-manager"
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="keep logs here (default: a temporary dir)"
    )
    parser.add_argument(
        "--webhook-source", type=Path, default=None, help="a checkout whose webhook the replicas run"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/reliability.md")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    options = RigOptions(
        bin_dir=args.bin_dir,
        rate=args.rate,
        min_creations=args.min_creations,
        settle=args.settle,
        shutdown_delay=args.shutdown_delay,
        workdir=args.workdir,
        webhook_source=args.webhook_source,
    )
    results = asyncio.run(run_all(args.runs, options))
    section = render(results, options, _version(args.bin_dir))
    print(section)
    if not args.no_write:
        write_section(DOC, "upgrade", section)
    # Non-zero for anything but what a SIGKILL cuts (the reviews in flight on the killed replica).
    return 1 if any(unexplained(figures) for figures in results) else 0


if __name__ == "__main__":
    sys.exit(main())
