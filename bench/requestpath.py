"""The request paths side by side, in one process: ``KubeApi`` and kubernetes_asyncio used bare
(its generated ``CoreV1Api`` and ``Watch``), both on the same library's ``ApiClient`` and aiohttp
session, creating the same pods and reading the same watch.

Run: ``python bench/requestpath.py [--requests 2000] [--concurrency 8] [--rounds 3] [--events 4000]
[--event-rate 2000]``. The servers run on threads of this process; the client's CPU is the main
thread's (``time.thread_time``), so the servers' work is not counted. The rounds alternate the paths
so that a change in the machine's load falls on all of them.

- Creates, against the sandbox API server: ``KubeApi.create`` (orjson in and out, the session
  and the configuration's auth settings) against ``CoreV1Api.create_namespaced_pod`` with
  ``_preload_content=False`` and the answer decoded by orjson (the library's request path, no
  model built).
- Watch events: a TLS server streams ``--events`` pod events as kube-apiserver does (chunked, one
  chunk per event, each pod as kube-apiserver answers it, managedFields included, about 4 KiB),
  paced at ``--event-rate`` per second so that, as in a controller's burst, most reads bring one
  event. Read three ways: the library's ``Watch().stream`` over ``CoreV1Api.list_namespaced_pod``
  (each event a ``V1Pod`` model, as the library is used bare), ``KubeApi.watch`` (the generator)
  and ``KubeApi.watch_into`` (each event handed on inside the read, what the reflectors use). Each
  event is decoded and counted.

Printed only; the figures go into docs/performance.md (the controller's tables) by
hand.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import ssl
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import yaml
from kubernetes_asyncio.client import CoreV1Api
from kubernetes_asyncio.watch import Watch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from certs.authority import new_ca  # noqa: E402
from certs.files import write_cert_dir  # noqa: E402
from certs.serving import issue_serving_certificate  # noqa: E402
from kube import eventloop  # noqa: E402
from kube.api import KubeApi, WatchEvent  # noqa: E402
from kube.client import KubeClient, make_api_client  # noqa: E402
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


def _library(client: KubeClient) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    core = CoreV1Api(client.api_client)

    async def create(body: dict[str, Any]) -> Any:
        response = await core.create_namespaced_pod(
            body["metadata"]["namespace"], body, _preload_content=False, _request_timeout=30.0
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
    results: dict[str, list[tuple[float, float]]] = {"KubeApi": [], "kubernetes_asyncio": []}
    with start_apiserver() as server:
        api = KubeApi(await make_api_client(server.kubeconfig), qps=0)
        try:
            paths = {"KubeApi": _own(api), "kubernetes_asyncio": _library(api.client)}
            for number in range(rounds):
                for label, create in paths.items():
                    namespace = f"bench-{label.lower().replace('_', '-')}-{number}"
                    await api.create(NAMESPACES, {"metadata": {"name": namespace}})
                    await _round(create, namespace, "warm", 50, concurrency)  # connections opened
                    results[label].append(await _round(create, namespace, "pod", requests, concurrency))
        finally:
            await api.close()
    return results


# -- watch events ------------------------------------------------------------------------------------


def _served_pod(index: int) -> dict[str, Any]:
    """A pod as kube-apiserver sends it in a watch event: defaults, status and managedFields."""
    name = f"bench-{index:05d}-worker-{index % 4}"
    container = {".": {}, "f:image": {}, "f:env": {}, "f:ports": {}}
    fields = {"f:metadata": {"f:labels": {".": {}, "f:job-name": {}, "f:replica-type": {}}},
              "f:spec": {"f:containers": {'k:{"name":"tensorflow"}': container}}}
    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {
            "name": name, "namespace": "bench", "uid": f"6f1c2a4e-0000-4000-8000-{index:012d}",
            "resourceVersion": str(100000 + index), "creationTimestamp": "2026-12-01T22:00:00Z",
            "labels": {"training.kubeflow.org/job-name": f"bench-{index:05d}",
                       "training.kubeflow.org/replica-type": "worker",
                       "training.kubeflow.org/replica-index": str(index % 4)},
            "annotations": {"scheduling.k8s.io/group-name": f"bench-{index:05d}"},
            "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                                 "name": f"bench-{index:05d}", "uid": "0b7e", "controller": True,
                                 "blockOwnerDeletion": True}],
            "managedFields": [
                {"manager": "tfgang-controller", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-12-01T22:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-12-01T22:00:01Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:status": {"f:conditions": {}, "f:phase": {}}}},
            ],
        },
        "spec": {
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}],
            "containers": [{
                "name": "tensorflow", "image": "tensorflow/tensorflow:2.15.0",
                "command": ["python", "train.py"],
                "env": [{"name": "TF_CONFIG", "value": '{"cluster":{"worker":["a:2222","b:2222"]}}'}],
                "ports": [{"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}],
                "resources": {}, "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent",
            }],
            "restartPolicy": "Never", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "schedulerName": "volcano",
            "securityContext": {}, "priority": 0, "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {"phase": "Pending", "qosClass": "BestEffort",
                   "conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                   "lastTransitionTime": "2026-12-01T22:00:01Z"}]},
    }  # fmt: skip


@contextlib.contextmanager
def _event_server(events: int, rate: float) -> Iterator[tuple[str, bytes]]:
    """A TLS server on a thread of its own that answers every request with a chunked watch of
    ``events`` pod events, ``rate`` per second; yields its URL and CA."""
    lines = [orjson.dumps({"type": "MODIFIED", "object": _served_pod(i)}) + b"\n" for i in range(events)]
    chunks = [f"{len(line):x}\r\n".encode() + line + b"\r\n" for line in lines]
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    ca = new_ca("bench-watch-ca", valid_days=1)
    serving = issue_serving_certificate(ca, ["localhost"], ip_addresses=["127.0.0.1"], valid_days=1)
    started = threading.Event()
    port_box: list[int] = []
    stop = threading.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(head)
            gap = 1.0 / rate
            next_at = time.monotonic()
            for chunk in chunks:
                writer.write(chunk)
                await writer.drain()
                next_at += gap
                delay = next_at - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        writer.close()

    def serve() -> None:
        async def main() -> None:
            with tempfile.TemporaryDirectory() as scratch:
                write_cert_dir(scratch, serving)
                context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
                context.load_cert_chain(f"{scratch}/tls.crt", f"{scratch}/tls.key")
                server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
            port_box.append(server.sockets[0].getsockname()[1])
            started.set()
            await asyncio.to_thread(stop.wait)
            server.close()

        asyncio.run(main())

    thread = threading.Thread(target=serve, name="watch-server", daemon=True)
    thread.start()
    started.wait(30)
    try:
        yield f"https://127.0.0.1:{port_box[0]}", ca.cert_pem
    finally:
        stop.set()
        thread.join(10)


async def _library_events(client: KubeClient) -> AsyncIterator[WatchEvent]:
    # The library used bare: its Watch over the generated list call, each object a V1Pod model.
    core = CoreV1Api(client.api_client)
    async with Watch() as watch:
        async for event in watch.stream(
            core.list_namespaced_pod, "bench", resource_version="1", timeout_seconds=60
        ):
            pod = event["object"]
            yield WatchEvent(event["type"], {"metadata": {"name": pod.metadata.name}})


async def _client(url: str, ca_pem: bytes) -> KubeClient:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "kubeconfig"
        ca_data = base64.b64encode(ca_pem).decode()
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "bench",
            "clusters": [{"name": "bench",
                          "cluster": {"server": url, "certificate-authority-data": ca_data}}],
            "users": [{"name": "bench", "user": {"token": "bench"}}],
            "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
        }))  # fmt: skip
        return await make_api_client(str(path))


async def _watch_round(path: str, url: str, ca_pem: bytes, events: int) -> float:
    """Client CPU (us) per event of one whole watch read by ``path``."""
    api = KubeApi(await _client(url, ca_pem), qps=0)
    seen = 0

    def take(event: WatchEvent) -> None:
        nonlocal seen
        seen += bool(event.object["metadata"]["name"])

    try:
        cpu = time.thread_time()
        if path == "kubernetes_asyncio Watch":
            async for event in _library_events(api.client):
                take(event)
        elif path == "KubeApi.watch":
            async for event in api.watch(PODS, "bench", resource_version="1", timeout_seconds=60):
                take(event)
        else:
            await api.watch_into(PODS, "bench", resource_version="1", timeout_seconds=60, on_event=take)
        used = time.thread_time() - cpu
    finally:
        await api.close()
    if seen != events:
        raise RuntimeError(f"{path} read {seen} of {events} events")
    return used / events * 1e6


WATCH_PATHS = ("kubernetes_asyncio Watch", "KubeApi.watch", "KubeApi.watch_into")


async def run_watches(events: int, rate: float, rounds: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {path: [] for path in WATCH_PATHS}
    with _event_server(events, rate) as (url, ca_pem):
        for path in WATCH_PATHS:
            await _watch_round(path, url, ca_pem, events)  # warm-up, not counted
        for _ in range(rounds):
            for path in WATCH_PATHS:
                results[path].append(await _watch_round(path, url, ca_pem, events))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--events", type=int, default=4000, help="watch events per round (0: none)")
    parser.add_argument("--event-rate", type=float, default=2000.0, help="watch events per second")
    args = parser.parse_args()
    results = eventloop.run(run(args.requests, args.concurrency, args.rounds)) if args.requests else {}
    watches = eventloop.run(run_watches(args.events, args.event_rate, args.rounds)) if args.events else {}
    print(f"{args.requests} pod creates per round, {args.concurrency} at a time, {args.rounds} rounds; "
          f"{args.events} watch events per round at {args.event_rate:g}/s; the client on "
          f"{'uvloop' if 'uvloop' in sys.modules else 'asyncio'}; load average "
          f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())} at the end\n")
    if results:
        print("| request path | client CPU per create, median (rounds) | creates/s, median |")
        print("|---|---|---|")
        for label, rounds in results.items():
            cpu = [f"{c:.0f}" for c, _ in rounds]
            print(f"| {label} | {statistics.median(c for c, _ in rounds):.0f} us ({', '.join(cpu)}) | "
                  f"{statistics.median(r for _, r in rounds):.0f} |")
    if watches:
        print("\n| watch path | client CPU per event, median (rounds) |")
        print("|---|---|")
        for label, per_event in watches.items():
            shown = ", ".join(f"{c:.1f}" for c in per_event)
            print(f"| {label} | {statistics.median(per_event):.1f} us ({shown}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
