"""Benchmark of the sandbox API server: create, list and watch rates with 10,000 pods and 100 watches.

Setup: ``tfgang-sandbox up --api-only`` runs as its own process; this process is the client
(aiohttp over HTTPS keep-alive connections, bearer token and CA from the kubeconfig the server writes).

Measured and printed (carried into ``docs/performance.md``'s tables by hand, ``bench/perfdoc.py``):
- create: ``--pods`` pod creations (seed-like pods) over ``--connections`` connections;
- list: full lists of all pods (JSON, and as kubectl's Table), lists/s and objects/s;
- watch: ``--watches`` concurrent watches on the pods of the namespace, then ``--updates`` status
  patches; events delivered per second across all watches and the time until every watch saw all;
- the server's RSS with everything stored.

Run: ``python bench/apiserver.py`` (about a minute; ``--no-write`` to only print).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import platform
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from perfdoc import section_markers, write_section

REPO = Path(__file__).resolve().parent.parent
MARK_BEGIN, MARK_END = section_markers("apiserver")
NAMESPACE = "default"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@dataclass(frozen=True)
class Server:
    url: str
    token: str
    ca_pem: bytes
    pid: int


@contextlib.contextmanager
def running_server(directory: str) -> Iterator[Server]:
    kubeconfig = os.path.join(directory, "bench.kubeconfig")
    process = subprocess.Popen(
        [sys.executable, "-m", "sandbox", "up", "--api-only", "--kubeconfig", kubeconfig],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if "kubeconfig written" in line:
                break
        with open(kubeconfig) as handle:
            config = yaml.safe_load(handle)
        cluster = config["clusters"][0]["cluster"]
        yield Server(
            cluster["server"],
            config["users"][0]["user"]["token"],
            base64.b64decode(cluster["certificate-authority-data"]),
            process.pid,
        )
    finally:
        process.terminate()
        process.wait(10)


def pod(index: int) -> dict[str, Any]:
    name = f"bench-worker-{index:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {
                "training.kubeflow.org/job-name": f"bench-{index // 4}",
                "training.kubeflow.org/replica-type": "worker",
            },
        },
        "spec": {
            "containers": [
                {
                    "name": "tensorflow",
                    "image": "busybox:1.37.0-glibc",
                    "command": ["sh", "-c", "trap exit INT TERM; sleep 30s & wait"],
                    "env": [
                        {
                            "name": "TF_CONFIG",
                            "value": json.dumps({"cluster": {"worker": [f"{name}.default.svc:2222"]}}),
                        }
                    ],
                    "resources": {"limits": {"cpu": "1", "memory": "100Mi"}},
                }
            ]
        },
    }


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def run(args: argparse.Namespace, server: Server) -> dict[str, Any]:
    context = ssl.create_default_context(cadata=server.ca_pem.decode())
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    connector = aiohttp.TCPConnector(ssl=context, limit=0)
    results: dict[str, Any] = {}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        base = f"{server.url}/api/v1/namespaces/{NAMESPACE}/pods"
        queue: asyncio.Queue[int] = asyncio.Queue()
        for index in range(args.pods):
            queue.put_nowait(index)

        async def creator() -> None:
            while not queue.empty():
                index = queue.get_nowait()
                async with session.post(base, json=pod(index)) as response:
                    assert response.status == 201, await response.text()
                    await response.read()

        started = time.perf_counter()
        await asyncio.gather(*(creator() for _ in range(args.connections)))
        elapsed = time.perf_counter() - started
        results["create_per_s"] = args.pods / elapsed

        for accept, key in (("application/json", "list"), (TABLE, "table_list")):
            started = time.perf_counter()
            for _ in range(args.lists):
                async with session.get(base, headers={"Accept": accept}) as response:
                    body = await response.json()
            elapsed = time.perf_counter() - started
            count = len(body.get("items") or body.get("rows") or [])
            assert count == args.pods, count
            results[f"{key}_per_s"] = args.lists / elapsed
            results[f"{key}_objects_per_s"] = args.lists * count / elapsed

        async with session.get(base, params={"limit": "1"}) as response:
            version = (await response.json())["metadata"]["resourceVersion"]
        received = [0] * args.watches
        done = asyncio.Event()
        finished = [0]

        async def watcher(slot: int) -> None:
            params = {"watch": "true", "resourceVersion": version, "timeoutSeconds": "600"}
            async with session.get(base, params=params) as response:
                async for _line in response.content:
                    received[slot] += 1
                    if received[slot] == args.updates:
                        finished[0] += 1
                        if finished[0] == args.watches:
                            done.set()
                        return

        watchers = [asyncio.create_task(watcher(slot)) for slot in range(args.watches)]
        await asyncio.sleep(1.0)
        started = time.perf_counter()
        patch_headers = {"Content-Type": "application/merge-patch+json"}
        for index in range(args.updates):
            body = {"status": {"phase": "Running", "podIP": f"10.1.{index // 250}.{index % 250}"}}
            async with session.patch(
                f"{base}/{pod(index)['metadata']['name']}/status", json=body, headers=patch_headers
            ) as response:
                assert response.status == 200, await response.text()
                await response.read()
        writes_done = time.perf_counter() - started
        await asyncio.wait_for(done.wait(), 300)
        elapsed = time.perf_counter() - started
        await asyncio.gather(*watchers)
        results["status_patch_per_s"] = args.updates / writes_done
        results["watch_events_per_s"] = args.watches * args.updates / elapsed
        results["watch_all_seen_s"] = elapsed
    results["rss_mib"] = rss_kib(server.pid) / 1024
    return results


def section(args: argparse.Namespace, results: dict[str, Any]) -> str:
    r = results
    pods, watches = args.pods, args.watches
    rows = [
        (f"create {pods} pods, {args.connections} connections", f"{r['create_per_s']:.0f} pods/s"),
        (
            f"list all {pods} pods (JSON)",
            f"{r['list_per_s']:.2f} lists/s ({r['list_objects_per_s']:.0f} objects/s)",
        ),
        (
            f"list all {pods} pods as a Table (kubectl get)",
            f"{r['table_list_per_s']:.2f} lists/s ({r['table_list_objects_per_s']:.0f} rows/s)",
        ),
        (
            f"{args.updates} status patches while {watches} watches are open",
            f"{r['status_patch_per_s']:.0f} patches/s",
        ),
        (
            f"watch fan-out to {watches} watches",
            f"{r['watch_events_per_s']:.0f} events/s delivered; every watch had every event after "
            f"{r['watch_all_seen_s']:.1f} s",
        ),
        (f"server RSS with {pods} pods stored", f"{r['rss_mib']:.0f} MiB"),
    ]
    return "\n".join(
        [
            MARK_BEGIN,
            "## Sandbox API server (`bench/apiserver.py`)",
            "",
            f"`python bench/apiserver.py` on {platform.machine()} with {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, measured {r['started']} with a load average of "
            f"{r['load_before']:.1f} before and {r['load_after']:.1f} after (other work shared the "
            "machine). The server (`tfgang-sandbox up --api-only`) and the aiohttp client are separate "
            "processes talking HTTPS over loopback.",
            "",
            "| measure | result |",
            "|---|---|",
            *(f"| {measure} | {result} |" for measure, result in rows),
            "",
            "Stored objects are never changed in place, so each object version is encoded to JSON once "
            "and that encoding serves every list and every watch event. Watch fan-out is bound by one "
            "TLS write per watch per event on the server's single event loop.",
            "",
            MARK_END,
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--lists", type=int, default=5)
    parser.add_argument("--watches", type=int, default=100)
    parser.add_argument("--updates", type=int, default=1_000)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    with (
        tempfile.TemporaryDirectory(prefix="bench-apiserver-") as directory,
        running_server(directory) as server,
    ):
        results = asyncio.run(run(args, server))
    results.update(started=started, load_before=load_before, load_after=os.getloadavg()[0])
    text = section(args, results)
    print(text)
    if not args.no_write:
        write_section(REPO / "docs" / "performance.md", "apiserver", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
