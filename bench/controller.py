"""Controller benchmark: 1,000 TFJobs of 4 replicas against the sandbox API server.

Run: ``python bench/controller.py [--jobs 1000] [--samples 100] [--workers 8]``. The controller runs
as a real process (so its RSS is its own); this script plays Volcano (it admits every PodGroup,
writing ``Inqueue`` the way the scheduler does) and the kubelet (pod statuses through ``pods/status``).
No webhook is registered: the numbers are the controller's.

Measured, and written to ``docs/performance.md`` between ``<!-- bench:controller -->`` markers:

- the time from the first TFJob create until every PodGroup and every pod exists;
- p50/p99 of the time from the last pod status change of a job to the job's new condition
  (Running after all pods run, Succeeded after worker 0 exits), on an otherwise idle controller;
- API requests the controller made per job (from the sandbox's request log, by its user);
- the controller's resident memory (VmRSS now, VmHWM peak).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import os
import platform
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from perfdoc import section_markers, write_section  # noqa: E402

from controller.resources import TFJOBS  # noqa: E402
from kube.api import KubeApi  # noqa: E402
from kube.client import make_api_client  # noqa: E402
from kube.errors import ApiError  # noqa: E402
from kube.patches import PatchType  # noqa: E402
from kube.resources import PODGROUPS_V1BETA1, PODS  # noqa: E402
from sandbox.testing import start_apiserver  # noqa: E402
from tests.integration.cluster import container_status, load_seed  # noqa: E402
from tests.integration.operator import controller_process  # noqa: E402

NAMESPACE = "default"
MARK_BEGIN, MARK_END = section_markers("controller")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


def _memory_kib(pid: int) -> dict[str, int]:
    found: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            match = re.match(r"(VmRSS|VmHWM):\s+(\d+) kB", line)
            if match:
                found[match.group(1)] = int(match.group(2))
    return found


async def _watch_added(
    api: KubeApi, res: Any, seen: set[str], on_added: Callable[[str], Awaitable[None]] | None = None
) -> None:
    """Collect the names of ``res`` objects as they appear (a watch, far cheaper than relisting)."""
    pending: set[asyncio.Task[None]] = set()
    resource_version = "0"
    while True:
        try:
            async for event in api.watch(
                res, NAMESPACE, resource_version=resource_version, timeout_seconds=60
            ):
                meta = event.object.get("metadata") or {}
                resource_version = str(meta.get("resourceVersion") or resource_version)
                name = str(meta.get("name") or "")
                if event.type == "ADDED" and name not in seen:
                    seen.add(name)
                    if on_added is not None:
                        task = asyncio.create_task(on_added(name))
                        pending.add(task)
                        task.add_done_callback(pending.discard)
        except ApiError:
            resource_version = "0"


def _admitter(api: KubeApi) -> Callable[[str], Awaitable[None]]:
    """Play Volcano: a new PodGroup goes Inqueue."""

    async def admit(name: str) -> None:
        with contextlib.suppress(ApiError):
            await api.patch(
                PODGROUPS_V1BETA1,
                name,
                {"status": {"phase": "Inqueue"}},
                NAMESPACE,
                patch_type=PatchType.MERGE,
            )

    return admit


async def _wait_for_state(api: KubeApi, job: str, state: str, within: float = 30.0) -> float:
    """Poll the job until its last condition is ``state``; the monotonic time it was seen."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = await api.get(TFJOBS, job, NAMESPACE)
        conditions = (found.get("status") or {}).get("conditions") or []
        if conditions and conditions[-1].get("type") == state:
            return time.monotonic()
        await asyncio.sleep(0.002)
    raise TimeoutError(f"{job} never reached {state}")


async def _transition(api: KubeApi, job: str, pods: list[str], phase: str, state: str) -> float:
    """Change every pod of ``job`` to ``phase``; seconds from the last change to ``state``."""
    for pod in pods:
        if phase == "Running":
            status = {"phase": "Running", "containerStatuses": [container_status("running")]}
        else:
            status = {"phase": phase, "containerStatuses": [container_status("terminated")]}
        await api.patch(
            PODS, pod, {"status": status}, NAMESPACE, patch_type=PatchType.MERGE, subresource="status"
        )
    last_change = time.monotonic()
    seen = await _wait_for_state(api, job, state)
    return seen - last_change


async def run(jobs: int, samples: int, workers: int) -> dict[str, Any]:
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"tfgang-bench-{os.getpid()}"
    workdir.mkdir(parents=True, exist_ok=True)
    with start_apiserver() as apiserver:
        _token, controller_kubeconfig = apiserver.add_user("tfgang-controller")
        client = await make_api_client(str(apiserver.kubeconfig))
        api = KubeApi(client, qps=5000.0, burst=5000)
        podgroups: set[str] = set()
        pods: set[str] = set()
        watchers = [
            asyncio.create_task(_watch_added(api, PODGROUPS_V1BETA1, podgroups, _admitter(api))),
            asyncio.create_task(_watch_added(api, PODS, pods)),
        ]
        try:
            with controller_process(
                str(controller_kubeconfig),
                workdir,
                "--workers",
                str(workers),
                "--kube-api-qps",
                "5000",
                "--kube-api-burst",
                "5000",
                "--log-level",
                "WARNING",
                name="bench-controller",
            ) as (process, _port):
                apiserver.clear_request_log()
                started = time.monotonic()
                semaphore = asyncio.Semaphore(32)

                seed = load_seed("normal", "bench", NAMESPACE)

                async def create(index: int) -> None:
                    job = copy.deepcopy(seed)
                    job["metadata"]["name"] = f"bench-{index:04d}"
                    async with semaphore:
                        await api.create(TFJOBS, job, NAMESPACE)

                await asyncio.gather(*(create(i) for i in range(jobs)))
                created_all = time.monotonic() - started
                while len(podgroups) < jobs or len(pods) < 4 * jobs:
                    if time.monotonic() - started > 600:
                        raise TimeoutError(f"only {len(podgroups)} PodGroups and {len(pods)} pods after 600s")
                    await asyncio.sleep(0.05)
                all_exist = time.monotonic() - started
                controller_cpu = _cpu_seconds(process.pid)
                own_cpu = time.process_time()
                await asyncio.sleep(2.0)  # let the status writes of the last jobs land

                # Idle latency: one job at a time, the controller otherwise quiet.
                latencies: list[float] = []
                for index in range(min(samples, jobs)):
                    job = f"bench-{index:04d}"
                    pods_of_job = [f"{job}-ps-0", *(f"{job}-worker-{i}" for i in range(3))]
                    latencies.append(await _transition(api, job, pods_of_job, "Running", "Running"))
                    latencies.append(await _transition(api, job, pods_of_job, "Succeeded", "Succeeded"))
                memory = _memory_kib(process.pid)
                records = [r for r in apiserver.request_log() if r.user == "tfgang-controller"]
        finally:
            for watcher in watchers:
                watcher.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)
            await api.close()
    by_verb = Counter(f"{r.verb} {r.resource}{'/' + r.subresource if r.subresource else ''}" for r in records)
    writes = sum(
        1 for r in records if r.verb in ("create", "update", "patch", "delete") and r.resource != "events"
    )
    events = sum(1 for r in records if r.resource == "events")
    return {
        "jobs": jobs,
        "workers": workers,
        "created_all_s": created_all,
        "all_exist_s": all_exist,
        "latency_samples": len(latencies),
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": _percentile(latencies, 0.99) * 1000,
        "requests_per_job": len(records) / jobs,
        "writes_per_job": writes / jobs,
        "events_per_job": events / jobs,
        "by_verb": dict(by_verb),
        "controller_cpu_s": controller_cpu,
        "server_and_load_cpu_s": own_cpu,
        "load_average": os.getloadavg(),
        "rss_mib": memory.get("VmRSS", 0) / 1024,
        "peak_rss_mib": memory.get("VmHWM", 0) / 1024,
    }


def render(result: dict[str, Any]) -> str:
    verbs = ", ".join(f"{verb} {count}" for verb, count in sorted(result["by_verb"].items()))
    return "\n".join(
        [
            MARK_BEGIN,
            "## Controller",
            "",
            f"`python bench/controller.py --jobs {result['jobs']} --workers {result['workers']}` on "
            f"{os.cpu_count()} cores ({platform.python_implementation()} {platform.python_version()}); the "
            "sandbox API server, the controller process and the load generator (playing Volcano and the "
            "kubelet) share the machine. No webhook is registered.",
            "",
            "| measure | result | target |",
            "|---|---|---|",
            f"| time until every PodGroup and pod of {result['jobs']} TFJobs (4 replicas) exists | "
            f"{result['all_exist_s']:.1f} s (all TFJobs created after {result['created_all_s']:.1f} s) "
            "| <= 60 s |",
            f"| last pod change -> new condition, p50 ({result['latency_samples']} transitions, idle) | "
            f"{result['p50_ms']:.0f} ms | |",
            f"| last pod change -> new condition, p99 | {result['p99_ms']:.0f} ms | <= 100 ms |",
            f"| controller API requests per job, all included | {result['requests_per_job']:.1f} | |",
            f"| of which writes to the job's objects (PodGroup, pods, services, status) | "
            f"{result['writes_per_job']:.1f} | |",
            f"| of which Event writes (aggregated) | {result['events_per_job']:.1f} | |",
            f"| controller RSS at the end (peak) | {result['rss_mib']:.0f} MiB "
            f"({result['peak_rss_mib']:.0f} MiB) | "
            "<= 200 MiB |",
            "",
            "Load average (1/5/15 min) at the end: "
            + "/".join(f"{value:.1f}" for value in result["load_average"])
            + " (anything above 2 means other work shared the two cores).",
            "",
            f"CPU until every pod existed: controller {result['controller_cpu_s']:.1f} s, sandbox API server "
            f"and load generator (one process) {result['server_and_load_cpu_s']:.1f} s.",
            "",
            f"Controller requests by verb and resource: {verbs}.",
            MARK_END,
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=50, help="jobs whose transitions are timed")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md")
    args = parser.parse_args()
    result = asyncio.run(run(args.jobs, args.samples, args.workers))
    section = render(result)
    print(section)
    if not args.no_write:
        write_section(REPO / "docs" / "performance.md", "controller", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
