"""A seeded storm of hostile requests against the real ``tfgang-webhook`` process.

Setup: a sandbox API server (in this process) holds the seed's TFJob ``default/tftest``; the real
webhook runs as its own process, with the defaults of ``tfgang-webhook``. This process sends
``--requests`` requests drawn with ``--seed``: malformed JSON, invalid UTF-8, damaged reviews
(wrong types at every path, removed fields), megabyte strings in every place a value is taken
from, deep nesting, wrong methods, paths, content types and encodings, oversized and truncated
bodies, and malformed HTTP, with a valid review of the seed's PS pod every tenth request, whose
answer must be the seed's TF_CONFIG.

Before the storm, ``--slow`` connections send their headers one byte per second while a normal
client posts the seed's PS pod review at ``--probe-rate`` per second, open loop, in two ways at
once: on a keep-alive connection made before (as kube-apiserver reuses its connections) and on a
new connection per review (as kube-apiserver opens one when its idle ones are busy). Its latency
while the slow connections are held is set beside its latency in the ``--probe-seconds`` before
they start (the anchor, same run, same client); a review's latency counts from when it was due,
so a review that waits for a connection slot counts its wait. Each slow connection's time to be
closed is counted from its connect (the client's view: waiting in the listen backlog included)
and from its TLS handshake's end (the server's header deadline).

Measured and printed (carried into ``docs/reliability.md``'s tables by hand, ``bench/perfdoc.py``):
requests tried, answers by HTTP status (and inside 200 reviews, by outcome), 5xx answers, valid
requests not answered correctly or dropped, the webhook's RSS before the slow connections and
after the storm (and its peak), /metrics size, the normal client's latency before and while the
slow connections are held, and after how many seconds the slow connections were closed.

Run: ``python bench/webhook_storm.py [--seed N] [--requests N] [--no-write]`` (about three minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import concurrent.futures
import contextlib
import copy
import gzip
import importlib.util
import json
import math
import multiprocessing
import os
import random
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import orjson

from certs.authority import new_ca
from certs.files import write_cert_dir
from certs.serving import issue_serving_certificate
from kube import eventloop

REPO = Path(__file__).resolve().parent.parent
T = TypeVar("T")


def _bench_helpers() -> Any:
    """``bench/webhook.py`` (its process and /proc helpers), loaded under another name than the
    ``webhook`` package it would shadow."""
    sys.path[:0] = [str(REPO), str(REPO / "bench")]
    spec = importlib.util.spec_from_file_location("bench_webhook", REPO / "bench" / "webhook.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


HELPERS = _bench_helpers()
from webhook.connections import DEFAULT_HEADER_TIMEOUT  # noqa: E402 (the path is set just above)

free_port, memory_kib, wait_ready = HELPERS.free_port, HELPERS.memory_kib, HELPERS.wait_ready


def webhook_process(kubeconfig: str, cert_dir: Path, port: int, ops_port: int, log: Path) -> Any:
    """The real ``tfgang-webhook`` at INFO, as the chart runs it, its log lines going to ``log``."""
    command = [
        "INFO" if part == "WARNING" else part
        for part in HELPERS.webhook_command(kubeconfig, cert_dir, port, ops_port)
    ]
    wrapped = ["sh", "-c", 'exec "$@" >"$STORM_LOG" 2>&1', "sh", *command]
    return HELPERS.server_process(wrapped, 0, {**os.environ, "STORM_LOG": str(log)})


DOC = REPO / "docs" / "reliability.md"
SECTION = "webhook-storm"
FIXTURES = REPO / "tests" / "fixtures" / "admissionreviews"
SEED_TF_CONFIG_FIXTURE = "mutate-seed-ps-0.json"
MIB = 1024 * 1024
# The normal client's latency is also shown from this long into a phase: the slow clients'
# TLS handshakes, all at once at its start, are behind it.
SETTLED_AFTER = 1.0
PATHS = ("/mutate-pods", "/validate-tfjobs")
SLOW_REFUSALS: collections.Counter[str] = collections.Counter()


def _fixtures() -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(FIXTURES.glob("*.json"))]


def _set(document: Any, path: tuple[Any, ...], value: Any) -> None:
    """Replace the value at ``path`` (KeyError, IndexError or TypeError when an earlier
    replacement took the path away)."""
    for step in path[:-1]:
        document = document[step]
    if isinstance(document, dict) and not isinstance(path[-1], str):
        raise TypeError("a list index into what is now an object")
    document[path[-1]] = value


def _random_json(chooser: random.Random, depth: int = 0) -> Any:
    kind = chooser.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return chooser.random() < 0.5
    if kind == 2:
        return chooser.randrange(-(2**63), 2**63)
    if kind == 3:
        return chooser.uniform(-1e300, 1e300)
    if kind == 4:
        return "".join(chr(chooser.randrange(32, 0x2FF)) for _ in range(chooser.randrange(12)))
    if kind == 5:
        return chooser.choice(["", "0", "-1", "ps", "worker", "tftest", "CREATE", "x" * 300])
    if kind == 6:
        return [_random_json(chooser, depth + 1) for _ in range(chooser.randrange(4))]
    return {
        str(chooser.randrange(100)): _random_json(chooser, depth + 1) for _ in range(chooser.randrange(4))
    }


def _nested(depth: int) -> bytes:
    return b'{"a":[' * (depth // 2) + b"0" + b"]}" * (depth // 2)


class Storm:
    """The requests: (label, method, path, headers, body, valid). ``valid`` ones must be mutated."""

    def __init__(self, seed: int, valid_review: dict[str, Any]) -> None:
        from tests.webhook.admission_cases import json_paths

        self.paths = json_paths
        self.chooser = random.Random(seed)
        self.fixtures = _fixtures()
        self.valid = valid_review

    def request(self, index: int) -> tuple[str, str, str, dict[str, str], bytes, bool]:
        chooser = self.chooser
        json_headers = {"Content-Type": "application/json"}
        if index % 10 == 0:
            return "valid", "POST", "/mutate-pods", json_headers, orjson.dumps(self.valid), True
        kind = chooser.choice(
            ["damaged"] * 6
            + ["huge"] * 2
            + ["json", "utf8", "deep", "method", "type", "encoding", "big", "http"]
        )
        path = chooser.choice(PATHS)
        if kind == "damaged":
            fixture = copy.deepcopy(chooser.choice(self.fixtures))
            review = fixture["review"]
            candidates = [p for p in self.paths(review["request"]) if p and p[0] != "uid"]
            for _ in range(chooser.randrange(1, 5)):
                target = chooser.choice(candidates)
                with contextlib.suppress(KeyError, IndexError, TypeError):
                    _set(review["request"], target, _random_json(chooser))
            return kind, "POST", fixture["endpoint"], json_headers, orjson.dumps(review), False
        if kind == "huge":
            review = copy.deepcopy(self.valid)
            huge = chooser.choice(["j", "N", "7", "-"]) * chooser.choice([64, 4096, MIB])
            where = chooser.choice(
                [
                    ("operation",),
                    ("namespace",),
                    ("name",),
                    ("kind", "kind"),
                    ("object", "metadata", "namespace"),
                    ("object", "metadata", "labels", "training.kubeflow.org/job-name"),
                    ("object", "metadata", "labels", "training.kubeflow.org/replica-type"),
                    ("object", "metadata", "labels", "training.kubeflow.org/replica-index"),
                    ("object", "metadata", "ownerReferences", 0, "uid"),
                    ("object", "spec", "containers", 0, "name"),
                ]
            )
            _set(review["request"], where, huge)
            return (
                f"huge {'.'.join(map(str, where))}",
                "POST",
                "/mutate-pods",
                json_headers,
                orjson.dumps(review),
                False,
            )
        if kind == "json":
            body = orjson.dumps(self.valid)
            return kind, "POST", path, json_headers, body[: chooser.randrange(len(body))], False
        if kind == "utf8":
            body = orjson.dumps(self.valid).replace(b"tftest-ps-0", b"tftest-\xff\xfe-0", 1)
            return kind, "POST", path, json_headers, body, False
        if kind == "deep":
            body = orjson.dumps(self.valid).replace(
                b'"nodeName"', b'"x":' + _nested(chooser.choice([200, 1000, 5000])) + b',"nodeName"', 1
            )
            if b'"x":' not in body:
                body = body[:-2] + b',"x":' + _nested(1000) + b"}}"
            return kind, "POST", path, json_headers, body, False
        if kind == "method":
            method = chooser.choice(["GET", "PUT", "DELETE", "PATCH", "OPTIONS"])
            return (
                kind,
                method,
                chooser.choice([*PATHS, "/", "/metrics", "/nowhere"]),
                json_headers,
                b"{}",
                False,
            )
        if kind == "type":
            content_type = chooser.choice(
                ["text/plain", "application/xml", "", "application/json; charset=latin1"]
            )
            return kind, "POST", path, {"Content-Type": content_type}, orjson.dumps(self.valid), False
        if kind == "encoding":
            encoding = chooser.choice(["gzip", "deflate", "br", "identity"])
            garbage = chooser.random() < 0.5
            body = orjson.dumps(self.valid)
            body = b"\x1f\x8b garbage" if garbage else gzip.compress(body) if encoding == "gzip" else body
            return kind, "POST", path, {**json_headers, "Content-Encoding": encoding}, body, False
        if kind == "http":
            raw = chooser.choice(
                [
                    b"POST * HTTP/1.1\r\nHost: x\r\n\r\n",
                    b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
                    b"POST /mutate-pods HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                    b"POST /mutate-pods HTTP/1.1\r\nX-Big: " + b"b" * 70_000 + b"\r\n\r\n",
                    b"POST /mutate-pods HTTP/1.1\r\n" + b"X-Many: m\r\n" * 500 + b"\r\n",
                    b"POST /mutate-pods HTTP/9.9\r\nHost: x\r\n\r\n",
                    b"\x16\x03\x01 not http at all\r\n\r\n",
                    b"POST /mutate-pods HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                ]
            )
            return kind, "RAW", "", {}, raw, False
        size = chooser.choice([5 * MIB, 4 * MIB + 1])
        return kind, "POST", path, json_headers, b"[" + b"0," * (size // 2) + b"0]", False


async def _exchange(
    port: int, context: ssl.SSLContext, method: str, path: str, headers: dict[str, str], body: bytes
) -> tuple[int, bytes]:
    """One request on its own connection: (status, body); status 0 when the connection dropped."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        if method == "RAW":
            writer.write(body)
        else:
            head = f"{method} {path} HTTP/1.1\r\nHost: tfgang-webhook\r\nContent-Length: {len(body)}\r\n"
            head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
            writer.write(head.encode() + b"\r\n" + body)
        try:
            response_head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, ConnectionError):
            return 0, b""
        status = int(response_head.split(b" ", 2)[1])
        length = 0
        for line in response_head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        return status, await reader.readexactly(length)
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()


async def _truncated(port: int, context: ssl.SSLContext, valid: bytes) -> int:
    """The answer to a request whose body stops half-way (its Content-Length is never reached);
    -1 when the connection did not get through the TLS handshake (counted in ``SLOW_REFUSALS``)."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    except (OSError, ssl.SSLError) as exc:
        SLOW_REFUSALS[f"truncated: {type(exc).__name__}"] += 1
        return -1
    try:
        writer.write(
            b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(valid)}\r\n\r\n".encode()
            + valid[: len(valid) // 2]
        )
        line = await asyncio.wait_for(reader.readline(), 120)
        return int(line.split()[1]) if line else 0
    except (ConnectionError, ssl.SSLError, TimeoutError):
        return 0
    finally:
        writer.close()


@dataclass(frozen=True)
class SlowConnection:
    """One slow-header connection, in seconds from its connect: when its TLS handshake ended (None:
    it never did) and when the server closed it (None: still open at the limit)."""

    handshake_done: float | None
    closed: float | None
    refusal: str | None = None


async def _slow_client(port: int, context: ssl.SSLContext, limit: float) -> SlowConnection:
    """A connection sending its headers one byte per second until the server closes it."""
    started = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=context), limit
        )
    except (OSError, ssl.SSLError, TimeoutError) as exc:
        return SlowConnection(None, None, type(exc).__name__)
    handshake_done = time.monotonic() - started

    async def trickle() -> None:
        for byte in b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"s" * 1000:
            writer.write(bytes([byte]))
            await asyncio.sleep(1.0)

    sending = asyncio.create_task(trickle())
    try:
        try:
            await asyncio.wait_for(reader.read(), max(0.0, limit - handshake_done))
        except TimeoutError:
            return SlowConnection(handshake_done, None)
        except (ConnectionError, ssl.SSLError):
            pass
        return SlowConnection(handshake_done, time.monotonic() - started)
    finally:
        sending.cancel()
        writer.close()


def _ready() -> None:
    """Nothing: run once so that the pool's process is up before the slow clients are timed."""


def _slow_clients(port: int, ca_pem: bytes, count: int, limit: float) -> list[SlowConnection]:
    """``count`` slow clients at once, in this (pool) process."""

    async def all_of_them() -> list[SlowConnection]:
        context = ssl.create_default_context(cadata=ca_pem.decode())
        return await asyncio.gather(*(_slow_client(port, context, limit) for _ in range(count)))

    return eventloop.run(all_of_them())


@dataclass
class Probe:
    """The normal client: the seed's PS pod review posted at a fixed rate, open loop; each latency
    counts from when the review was due (inf: not answered 200 with a patch)."""

    url: str
    body: bytes
    rate: float
    latencies: dict[str, list[float]] = field(default_factory=dict)

    async def run(self, session: aiohttp.ClientSession, kind: str, stop: asyncio.Event) -> None:
        samples = self.latencies.setdefault(kind, [])
        settled = self.latencies.setdefault(f"{kind} settled", [])
        pending: set[asyncio.Task[None]] = set()
        # perf_counter, not the loop's clock: uvloop's counts whole milliseconds.
        first_due = time.perf_counter()

        async def one(due: float) -> None:
            answered = False
            with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError, ValueError):
                async with session.post(
                    self.url,
                    data=self.body,
                    headers={"Content-Type": "application/json"},
                    timeout=aiohttp.ClientTimeout(total=60),
                ) as response:
                    answer = await response.read()
                    answered = response.status == 200 and b'"patch"' in answer
            latency = time.perf_counter() - due if answered else math.inf
            samples.append(latency)
            if due - first_due >= SETTLED_AFTER:
                settled.append(latency)

        due = first_due
        while not stop.is_set():
            task = asyncio.create_task(one(due))
            pending.add(task)
            task.add_done_callback(pending.discard)
            due += 1.0 / self.rate
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), max(0.0, due - time.perf_counter()))
        await asyncio.gather(*pending)


async def _probed(
    probe: Probe, port: int, context: ssl.SSLContext, phase: str, work: Awaitable[T]
) -> tuple[dict[str, list[float]], T]:
    """The probe's latencies on both kinds of connection while ``work`` runs, and its result."""
    keep_alive = aiohttp.TCPConnector(ssl=context, limit=0)
    new_each = aiohttp.TCPConnector(ssl=context, force_close=True, limit=0)
    async with (
        aiohttp.ClientSession(connector=keep_alive) as reusing,
        aiohttp.ClientSession(connector=new_each) as connecting,
    ):
        # The keep-alive connection is made before the phase, as kube-apiserver's pool would be.
        async with reusing.post(probe.url, data=probe.body, headers={"Content-Type": "application/json"}):
            pass
        probe.latencies = {}
        stop = asyncio.Event()
        probing = [
            asyncio.create_task(probe.run(reusing, f"{phase} keep-alive", stop)),
            asyncio.create_task(probe.run(connecting, f"{phase} new connection", stop)),
        ]
        try:
            result = await work
        finally:
            stop.set()
            await asyncio.gather(*probing)
    return dict(probe.latencies), result


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)] if ordered else math.nan


def _outcome(status: int, body: bytes) -> str:
    if status != 200:
        return str(status)
    with contextlib.suppress(ValueError, KeyError, TypeError):
        response = orjson.loads(body)["response"]
        if response["allowed"]:
            return "200 allowed" + (" (patched)" if "patch" in response else "")
        return f"200 denied {response['status']['code']}"
    return "200 unparsable"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from sandbox.testing import start_apiserver

    seed_case = json.loads((FIXTURES / SEED_TF_CONFIG_FIXTURE).read_text())
    expected_env = next(
        op["value"]
        for op in seed_case["expected"]["patch"]
        if op["path"].startswith("/spec/containers/0/env")
    )
    job = copy.deepcopy(seed_case["tfjobs"][0])
    for key in ("uid", "resourceVersion", "generation", "creationTimestamp"):
        job["metadata"].pop(key, None)
    with start_apiserver() as handle, tempfile.TemporaryDirectory() as directory:
        stored = handle.call(handle.server.apply_object(job), 30.0)
        valid = copy.deepcopy(seed_case["review"])
        valid["request"]["object"]["metadata"]["ownerReferences"][0]["uid"] = stored["metadata"]["uid"]
        ca = new_ca("storm-ca", valid_days=1)
        write_cert_dir(directory, issue_serving_certificate(ca, ["localhost"], ip_addresses=["127.0.0.1"]))
        context = ssl.create_default_context(cadata=ca.cert_pem.decode())
        port, ops_port = free_port(), free_port()
        storm = Storm(args.seed, valid)
        log = Path(directory) / "webhook.log"
        with webhook_process(handle.kubeconfig, Path(directory), port, ops_port, log) as process:
            await wait_ready(ops_port, 60)
            await asyncio.sleep(1.0)
            rss_before, _ = memory_kib(process.pid)
            probe = Probe(f"https://127.0.0.1:{port}/mutate-pods", orjson.dumps(valid), args.probe_rate)
            latencies, _ = await _probed(probe, port, context, "before", asyncio.sleep(args.probe_seconds))

            # The slow clients run in a process of their own: their TLS handshakes, all at once,
            # would otherwise stall this loop, and the normal client's latency with it.
            with concurrent.futures.ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn")
            ) as pool:
                await asyncio.get_running_loop().run_in_executor(pool, _ready)
                slow_connections = asyncio.get_running_loop().run_in_executor(
                    pool, _slow_clients, port, ca.cert_pem, args.slow, args.slow_limit
                )
                held, slow_results = await _probed(probe, port, context, "held", slow_connections)
            latencies.update(held)
            truncated = [
                asyncio.create_task(_truncated(port, context, orjson.dumps(valid)))
                for _ in range(args.truncated)
            ]
            answers: collections.Counter[str] = collections.Counter()
            kinds: collections.Counter[str] = collections.Counter()
            failures: list[str] = []
            started = time.monotonic()

            async def one(index: int) -> None:
                label, method, path, headers, body, must_mutate = storm.request(index)
                try:
                    status, answer = await _exchange(port, context, method, path, headers, body)
                except (OSError, ssl.SSLError, asyncio.IncompleteReadError, TimeoutError) as exc:
                    status, answer = 0, str(exc).encode()
                outcome = _outcome(status, answer) if status else "dropped"
                answers[outcome] += 1
                kinds[label.split(" ")[0]] += 1
                if status >= 500 or (status == 0 and not label.startswith("big")):
                    failures.append(f"{label}: {outcome}")
                if must_mutate:
                    patch = orjson.loads(answer)["response"].get("patch") if status == 200 else None
                    operations = orjson.loads(base64.b64decode(patch)) if patch else []
                    values = [
                        op.get("value")
                        for op in operations
                        if op["path"].startswith("/spec/containers/0/env")
                    ]
                    if values != [expected_env]:
                        failures.append(f"valid review answered {outcome} without the seed's TF_CONFIG")

            # Each request is drawn when a sender is free to send it, in index order (the same
            # draws as ever): drawn all at once, the megabyte bodies kept this loop from the TLS
            # handshakes of the truncated-body clients for longer than the server's deadline.
            indices = iter(range(args.requests))

            async def sender() -> None:
                for index in indices:
                    await one(index)

            await asyncio.gather(*(sender() for _ in range(args.concurrency)))
            elapsed = time.monotonic() - started
            for status in await asyncio.gather(*truncated):
                if status < 0:
                    continue  # refused at the TLS handshake: in SLOW_REFUSALS, reported with the slow ones
                answers[str(status) if status else "dropped"] += 1
                kinds["truncated"] += 1
            await asyncio.sleep(2.0)
            rss_after, peak = memory_kib(process.pid)
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"http://127.0.0.1:{ops_port}/metrics") as response,
            ):
                metrics = await response.text()
            log_lines = log.read_bytes().splitlines()
    series = [
        line for line in metrics.splitlines() if line.startswith("tfgang_webhook_admission_decisions_total{")
    ]
    return {
        "seed": args.seed,
        "requests": args.requests + args.truncated,
        "seconds": elapsed,
        "answers": dict(sorted(answers.items())),
        "kinds": dict(sorted(kinds.items())),
        "failures": failures,
        "rss_before_mib": rss_before / 1024,
        "rss_after_mib": rss_after / 1024,
        "peak_mib": peak / 1024,
        "metrics_bytes": len(metrics),
        "log_bytes": sum(len(line) + 1 for line in log_lines),
        "log_lines": len(log_lines),
        "log_longest": max((len(line) for line in log_lines), default=0),
        "log_errors": sum(b'"level": "ERROR"' in line for line in log_lines),
        "decision_series": len(series),
        "header_timeout": DEFAULT_HEADER_TIMEOUT,
        "slow": slow_results,
        "latencies": latencies,
    }


def _latency(samples: list[float]) -> str:
    answered = [seconds for seconds in samples if math.isfinite(seconds)]
    if not answered:
        return f"none of {len(samples)} answered"
    text = (
        f"p50 {_quantile(answered, 0.5) * 1000:.1f} / p99 {_quantile(answered, 0.99) * 1000:.1f} / "
        f"max {max(answered) * 1000:.1f} ms ({len(samples)} reviews"
    )
    unanswered = len(samples) - len(answered)
    return text + (f", {unanswered} not answered)" if unanswered else ")")


def _seconds(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.1f} s (median), {max(values):.1f} s (max)"


def _slow_rows(result: dict[str, Any]) -> list[str]:
    slow: list[SlowConnection] = result["slow"]
    deadline = result["header_timeout"]
    latencies = result["latencies"]
    taken = [connection for connection in slow if connection.handshake_done is not None]
    closed = [connection for connection in taken if connection.closed is not None]
    from_connect = [connection.closed for connection in closed if connection.closed is not None]
    from_handshake = [
        connection.closed - connection.handshake_done
        for connection in closed
        if connection.closed is not None and connection.handshake_done is not None
    ]
    # The header deadline, plus the second the slow client waits between two bytes.
    within = sum(seconds <= deadline + 1.0 for seconds in from_connect)
    refusals = collections.Counter(connection.refusal for connection in slow if connection.refusal)
    rows = [
        f"| normal client while {len(slow)} slow-header connections are held, {kind} "
        f"(before they start: the anchor) | {_latency(latencies.get('held ' + kind, []))} "
        f"(anchor {_latency(latencies.get('before ' + kind, []))}) |"
        for kind in ("keep-alive", "new connection")
    ]
    rows += [
        f"| the same from {SETTLED_AFTER:g} s after they connect (their TLS handshakes behind), {kind} | "
        f"{_latency(latencies.get(f'held {kind} settled', []))} "
        f"(anchor {_latency(latencies.get(f'before {kind} settled', []))}) |"
        for kind in ("keep-alive", "new connection")
    ]
    rows.append(
        f"| {len(slow)} connections sending headers at 1 byte/s | {within} closed within the "
        f"{deadline:g} s header deadline (+1 s) of their connect; closed after {_seconds(from_connect)} "
        f"from their connect, {_seconds(from_handshake)} from their TLS handshake's end; "
        f"{len(slow) - len(taken)} never got through the TLS handshake {dict(refusals) or ''}; "
        f"{len(taken) - len(closed)} still open at the client's limit |"
    )
    if SLOW_REFUSALS:
        rows.append(f"| truncated-body requests refused at the TLS handshake | {dict(SLOW_REFUSALS)} |")
    return rows


def render(result: dict[str, Any]) -> str:
    answers = ", ".join(f"{outcome}: {count:,}" for outcome, count in result["answers"].items())
    kinds = ", ".join(f"{kind} {count:,}" for kind, count in result["kinds"].items())
    failures = result["failures"]
    return "\n".join(
        [
            HELPERS.section_markers(SECTION)[0],
            f"Storm `python bench/webhook_storm.py --seed {result['seed']}`, "
            f"measured {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC on 2 shared cores "
            f"({result['seconds']:.0f} s):",
            "",
            "| measure | result |",
            "|---|---|",
            f"| requests tried | {result['requests']:,} ({kinds}) |",
            f"| answers by status | {answers} |",
            f"| 5xx answers, dropped or wrong answers to well-formed requests | {len(failures)} |",
            f"| webhook RSS before / after the storm (peak) | {result['rss_before_mib']:.1f} / "
            f"{result['rss_after_mib']:.1f} MiB ({result['peak_mib']:.1f} MiB) |",
            f"| `/metrics` after the storm | {result['metrics_bytes']:,} bytes, "
            f"{result['decision_series']} decision series |",
            f"| webhook log (INFO) | {result['log_lines']:,} lines, {result['log_bytes']:,} bytes, longest "
            f"{result['log_longest']:,}; {result['log_errors']} at ERROR |",
            *_slow_rows(result),
            *([""] + [f"- failure: {failure}" for failure in failures[:10]] if failures else []),
            HELPERS.section_markers(SECTION)[1],
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--slow", type=int, default=300, help="connections sending headers at 1 byte/s")
    parser.add_argument("--slow-limit", type=float, default=60.0, help="seconds a slow client waits")
    parser.add_argument(
        "--probe-rate", type=float, default=40.0, help="normal reviews/s on each connection kind"
    )
    parser.add_argument("--probe-seconds", type=float, default=5.0, help="the normal client's anchor phase")
    parser.add_argument("--truncated", type=int, default=50, help="requests whose body stops half-way")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/reliability.md")
    args = parser.parse_args()
    result = eventloop.run(run(args))
    section = render(result)
    print(section)
    if not args.no_write:
        HELPERS.write_section(DOC, SECTION, section)
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
