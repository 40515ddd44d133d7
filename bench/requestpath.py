"""The two HTTP request paths side by side, in one process: ``KubeApi``'s own client (``kube/http.py``)
and aiohttp's ``ClientSession``, which it replaced for unary requests, creating the same pods.

Run: ``python bench/requestpath.py [--requests 2000] [--concurrency 8] [--rounds 3]``. The sandbox
API server runs on a thread of this process; the client's CPU is the main thread's
(``time.thread_time``), so the server's work is not counted. The rounds alternate the two paths so
that a change in the machine's load falls on both. The aiohttp path is the one ``KubeApi._request``
had before (the connection's session, its headers, orjson in and out). Printed only; the figures go
into docs/performance.md ("Controller: what was changed, measured") by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kube import eventloop  # noqa: E402
from kube.api import KubeApi  # noqa: E402
from kube.client import make_api_client  # noqa: E402
from kube.connection import Connection  # noqa: E402
from kube.resources import NAMESPACES, PODS  # noqa: E402
from sandbox.testing import start_apiserver  # noqa: E402


def _pod(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "bench", "index": name}},
        "spec": {"containers": [{"name": "tensorflow", "image": "busybox", "command": ["sleep", "1"]}]},
    }  # fmt: skip


def _own(api: KubeApi) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    async def create(body: dict[str, Any]) -> Any:
        return await api.create(PODS, body)

    return create


def _aiohttp(client: Connection) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    timeout = aiohttp.ClientTimeout(total=30.0)

    async def create(body: dict[str, Any]) -> Any:
        url = f"{client.host}{PODS.path(body['metadata']['namespace'])}"
        headers = await client.headers("application/json", "application/json")
        response = await client.session.request(
            "POST", url, headers=headers, data=orjson.dumps(body), timeout=timeout, **client.request_options
        )
        try:
            data = await response.read()
        finally:
            response.release()
        if response.status != 201:
            raise RuntimeError(f"create answered {response.status}: {data[:200]!r}")
        return orjson.loads(data)

    return create


async def _round(
    create: Callable[[dict[str, Any]], Awaitable[Any]], namespace: str, prefix: str, requests: int,
    concurrency: int,
) -> tuple[float, float]:
    names = iter(range(requests))

    async def worker() -> None:
        for index in names:
            await create(_pod(namespace, f"{prefix}-{index}"))

    cpu, wall = time.thread_time(), time.monotonic()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return (time.thread_time() - cpu) / requests * 1e6, requests / (time.monotonic() - wall)


async def run(requests: int, concurrency: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    results: dict[str, list[tuple[float, float]]] = {"kube.http": [], "aiohttp": []}
    with start_apiserver() as server:
        api = KubeApi(await make_api_client(server.kubeconfig), qps=0)
        try:
            paths = {"kube.http": _own(api), "aiohttp": _aiohttp(api.client)}
            for number in range(rounds):
                for label, create in paths.items():
                    namespace = f"bench-{label.replace('.', '-')}-{number}"
                    await api.create(NAMESPACES, {"metadata": {"name": namespace}})
                    await _round(create, namespace, "warm", 50, concurrency)  # connections opened
                    results[label].append(await _round(create, namespace, "pod", requests, concurrency))
        finally:
            await api.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = eventloop.run(run(args.requests, args.concurrency, args.rounds))
    print(f"{args.requests} pod creates per round, {args.concurrency} at a time, {args.rounds} rounds, "
          f"the client on {'uvloop' if 'uvloop' in sys.modules else 'asyncio'}; load average "
          f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())} at the end\n")
    print("| request path | client CPU per create, median (rounds) | creates/s, median |")
    print("|---|---|---|")
    for label, rounds in results.items():
        cpu = [f"{c:.0f}" for c, _ in rounds]
        print(f"| {label} | {statistics.median(c for c, _ in rounds):.0f} us ({', '.join(cpu)}) | "
              f"{statistics.median(r for _, r in rounds):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
