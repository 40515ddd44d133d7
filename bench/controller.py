"""Controller benchmark: 1,000 TFJobs of 4 replicas against the sandbox API server.

Run: ``python bench/controller.py [--jobs 1000] [--samples 100] [--workers 8]``. The controller runs
as a real process (so its RSS is its own); this script plays Volcano (it admits every PodGroup,
writing ``Inqueue`` the way the scheduler does) and the kubelet (pod statuses through ``pods/status``).
The real tfgang webhook runs as a process of its own (a certificate from ``tfgang-certs issue``), registered
with the chart's webhook configurations (``sandbox.webhook_configs``) for both phases below: the controller
deletes a pod the mutating webhook did not mark, so without it no job would progress, and the plain
client's pods (the controller's own, built by ``tfjob.pods``: job-name label, controller owner reference)
go through it the same way, so the API server's per-object CPU includes calling the webhook in both.

Measured and printed (carried into ``docs/performance.md``'s tables by hand, ``bench/perfdoc.py``):

- the time from the first TFJob create until every PodGroup and every pod exists;
- p50/p99 of the time from the last pod status change of a job to the job's new condition
  (Running after all pods run, Succeeded after worker 0 exits), on an otherwise idle controller;
- API requests the controller made per job (from the sandbox's request log, by its user);
- the controller's resident memory (VmRSS now, VmHWM peak);
- CPU per object created (PodGroups, pods, services), from /proc: of the controller, of the webhook
  process (its own row, so the controller's and API server's stay comparable), and of the API
  server both while the controller works and while a plain concurrent client (this process, before
  the controller starts) creates the same objects for the same TFJobs in another namespace (deleted
  again before the controller starts), so the cost the controller adds is a ratio, not a wall time
  on a shared machine. The sandbox API server runs on its own thread of this process: its CPU is
  that thread's;
- after a ``kill -9`` of the controller, a new one's time to ready, its RSS (a fresh process holding
  the same objects) and how soon a job created then gets its PodGroup; and the restart goal's order:
  a job created right after the new process is spawned (no status, before ready) gets its PodGroup
  before the resync of the jobs that have one is done (timed from its create and from the process
  start, with the reconcile passes done by then, beside the caches' sync and the resync's end).

Scales: ``--jobs 1000`` by default; ``--jobs 10000`` works the same and takes about ten times as long.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import functools
import json
import os
import platform
import re
import ssl
import statistics
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import aiohttp  # noqa: E402
import writebudget  # noqa: E402
from perfdoc import section_markers, write_section  # noqa: E402
from profiling import profile_summary, py_spy  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from controller.resources import TFJOBS  # noqa: E402
from kube import eventloop  # noqa: E402
from kube.api import KubeApi  # noqa: E402
from kube.client import make_api_client  # noqa: E402
from kube.errors import AlreadyExists, ApiError  # noqa: E402
from kube.patches import PatchType  # noqa: E402
from kube.resources import (  # noqa: E402
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    PODGROUPS_V1BETA1,
    PODS,
    SERVICES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
)
from sandbox.cluster import WEBHOOK_SERVICE, child_environment  # noqa: E402
from sandbox.ports import free_port  # noqa: E402
from sandbox.testing import start_apiserver  # noqa: E402
from sandbox.webhook_configs import OPERATOR_NAMESPACE, ca_bundle_of, webhook_configurations  # noqa: E402
from tests.integration.cluster import container_status, load_seed  # noqa: E402
from tests.integration.operator import controller_process, metrics_text  # noqa: E402
from tfjob.constants import ANNOTATION_GROUP_NAME  # noqa: E402
from tfjob.facts import read_facts  # noqa: E402
from tfjob.podgroup import desired_podgroup  # noqa: E402
from tfjob.pods import desired_pod  # noqa: E402
from tfjob.services import desired_service  # noqa: E402
from tfjob.settings import Settings  # noqa: E402

NAMESPACE = "default"
SANDBOX, KUBE_APISERVER = "sandbox", "kube-apiserver"
# Where the plain client creates the same objects; they are deleted before the controller starts.
PLAIN_NAMESPACE = "plain"


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    return sum(_user_system_seconds(pid))


def _user_system_seconds(pid: int) -> tuple[float, float]:
    """A process's user and system (kernel) CPU time so far."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return int(fields[11]) / ticks, int(fields[12]) / ticks
    return 0.0, 0.0


def _memory_kib(pid: int) -> dict[str, int]:
    found: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            match = re.match(r"(VmRSS|VmHWM):\s+(\d+) kB", line)
            if match:
                found[match.group(1)] = int(match.group(2))
    return found


def _thread_cpu_seconds(name: str) -> Callable[[], float]:
    """A reader of the CPU time of this process's thread called ``name`` (the sandbox API server's)."""
    import threading

    native_id = next(thread.native_id for thread in threading.enumerate() if thread.name == name)

    def read() -> float:
        fields = Path(f"/proc/self/task/{native_id}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    return read


def _children(job: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    """What the controller creates for ``job`` (which carries its uid): the PodGroup, pods, services."""
    facts = read_facts(job)  # type: ignore[arg-type]
    objects: list[tuple[Any, dict[str, Any]]] = [
        (PODGROUPS_V1BETA1, dict(desired_podgroup(facts, {}, Settings())))
    ]
    for replica in facts.replica_types:
        for index in range(replica.replicas):
            objects.append((PODS, dict(desired_pod(facts, replica.rtype, index))))
            objects.append((SERVICES, dict(desired_service(facts, replica.rtype, index))))
    return objects


async def _until_server_idle(
    server_cpu: Callable[[], float], share: float = 0.15, steady: float = 2.0, within: float = 300.0
) -> float:
    """Seconds until the API server has used under ``share`` of a core for ``steady`` seconds (an
    idle kube-apiserver with its watchers, etcd's heartbeats and leader elections uses 4-12 %).

    Each phase is measured from an idle API server: kube-apiserver's garbage collector (in
    kube-controller-manager) still walks the deleted plain phase's objects for a while after the
    last one is gone, and a fresh kube-apiserver finishes its own start-up work; either, counted
    into one phase and not the other, moved the ratio by more than the controller's share."""
    started = time.monotonic()
    quiet_since, last_cpu, last_at = started, server_cpu(), started
    # /proc counts CPU in ticks of 10 ms: a half-second window tells 15 % from idle.
    while time.monotonic() - started < within:
        await asyncio.sleep(0.5)
        now, cpu = time.monotonic(), server_cpu()
        if cpu - last_cpu > share * (now - last_at):
            quiet_since = now
        elif now - quiet_since >= steady:
            return quiet_since - started
        last_cpu, last_at = cpu, now
    raise TimeoutError(f"the API server was not idle within {within:.0f} s")


def _apiserver_pprof(apiserver: Any, out: Path | None, seconds: float = 15.0) -> asyncio.Task[None] | None:
    """kube-apiserver's own CPU profile for the next ``seconds`` (Go's pprof, at
    ``/debug/pprof/profile``) written to ``out``; read it with ``go tool pprof -top``."""
    if out is None or not hasattr(apiserver, "token"):
        return None

    async def fetch() -> None:
        context = ssl.create_default_context(cadata=apiserver.ca_pem.decode())
        async with aiohttp.ClientSession() as session, session.get(
            f"{apiserver.url}/debug/pprof/profile",
            params={"seconds": str(int(seconds))},
            headers={"Authorization": f"Bearer {apiserver.token}"},
            ssl=context,
            timeout=aiohttp.ClientTimeout(total=seconds + 30),
        ) as response:
            profile = await response.read()
        await asyncio.to_thread(out.write_bytes, profile)

    return asyncio.create_task(fetch())


@contextlib.asynccontextmanager
async def _webhook(api: KubeApi, kubeconfig: str, workdir: Path) -> AsyncIterator[int]:
    """The real tfgang webhook as a process (as ``sandbox.cluster`` starts it), registered with the
    chart's configurations; its pid. It runs as the admin: on kube-apiserver no RBAC of the chart's
    is installed here, and its few TFJob reads are not the controller's requests."""
    cert_dir = workdir / "webhook-certs"
    issued = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "certs", "issue", "--service", WEBHOOK_SERVICE, "--namespace",
        OPERATOR_NAMESPACE, "--out", str(cert_dir), "--ip-address", "127.0.0.1",
        env=child_environment(), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, errors = await issued.communicate()
    if issued.returncode != 0:
        raise RuntimeError(f"tfgang-certs issue failed: {errors.decode(errors='replace')}")
    port, ops_port = free_port(), free_port()
    with (workdir / "bench-webhook.log").open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "webhook", "--kubeconfig", kubeconfig, "--cert-dir", str(cert_dir),
            "--host", "127.0.0.1", "--port", str(port), "--ops-port", str(ops_port),
            "--log-level", "WARNING", env=child_environment(), stdout=log, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
    try:
        await _until_ready(process, ops_port, within=60, name="the webhook")
        ca_bundle = ca_bundle_of((cert_dir / "ca.crt").read_bytes())
        resources = {
            "MutatingWebhookConfiguration": MUTATING_WEBHOOK_CONFIGURATIONS,
            "ValidatingWebhookConfiguration": VALIDATING_WEBHOOK_CONFIGURATIONS,
        }
        for configuration in webhook_configurations(f"https://127.0.0.1:{port}", ca_bundle):
            await api.create(resources[str(configuration["kind"])], dict(configuration))
        yield process.pid
    finally:
        if process.returncode is None:
            process.terminate()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10):
                    await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()


async def _plain_phase(
    api: KubeApi,
    jobs: int,
    server_cpu: Callable[[], float],
    server_in_process: bool,
    webhook_cpu: Callable[[], float],
    pprof: Callable[[], asyncio.Task[None] | None] = lambda: None,
    creator: KubeApi | None = None,
) -> dict[str, float]:
    """A plain concurrent client creates the TFJobs, then their children: the API server's CPU per
    create, and the client's own (this process, less the sandbox API server's thread if it runs here):
    what one request costs KubeApi's client doing nothing else, the floor under the controller's.
    The webhook's CPU is measured over the same windows; every pod must come back mutated by it."""
    seed = load_seed("normal", "bench", PLAIN_NAMESPACE)
    with contextlib.suppress(AlreadyExists):  # made by the warm-up round
        await api.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PLAIN_NAMESPACE}}
        )
    semaphore = asyncio.Semaphore(32)

    async def create(res: Any, body: dict[str, Any], client: KubeApi = api) -> dict[str, Any]:
        async with semaphore:
            return await client.create(res, body, PLAIN_NAMESPACE)

    def job(index: int) -> dict[str, Any]:
        body = copy.deepcopy(seed)
        body["metadata"]["name"] = f"bench-{index:04d}"
        return body

    # Volcano and the kubelet watch in both phases, and Volcano admits every PodGroup in both:
    # the cluster's own work for these objects, so that the ratio is the controller's extra alone.
    watchers = [
        asyncio.create_task(
            _watch_added(api, PODGROUPS_V1BETA1, set(), _admitter(api, PLAIN_NAMESPACE), PLAIN_NAMESPACE)
        ),
        asyncio.create_task(_watch_added(api, PODS, set(), namespace=PLAIN_NAMESPACE)),
    ]
    idle_wait = await _until_server_idle(server_cpu)
    before, webhook_before = server_cpu(), webhook_cpu()
    created = await asyncio.gather(*(create(TFJOBS, job(i)) for i in range(jobs)))
    tfjobs_cpu, tfjobs_webhook_cpu = server_cpu() - before, webhook_cpu() - webhook_before
    children = [child for body in created for child in _children(body)]
    started, before, client_before = time.monotonic(), server_cpu(), time.process_time()
    webhook_before = webhook_cpu()
    profiled = pprof()
    answers = await asyncio.gather(*(create(res, body, creator or api) for res, body in children))
    seconds = time.monotonic() - started
    await asyncio.sleep(2.0)  # the watch events of the last creates, as after the controller's burst
    server = server_cpu() - before
    webhook = webhook_cpu() - webhook_before
    unmutated = [
        answer["metadata"]["name"]
        for (res, _), answer in zip(children, answers, strict=True)
        if res is PODS and ANNOTATION_GROUP_NAME not in (answer["metadata"].get("annotations") or {})
    ]
    if unmutated:  # the comparison would be unfair: the webhook left the plain client's pods alone
        raise RuntimeError(f"{len(unmutated)} plain pods were not mutated by the webhook: {unmutated[:3]}")
    if profiled is not None:
        await profiled
    client = time.process_time() - client_before - (server if server_in_process else 0.0)
    for watcher in watchers:
        watcher.cancel()
    await asyncio.gather(*watchers, return_exceptions=True)
    # Out of the controller's way (it watches every namespace): the TFJobs and all they own go.
    async def delete(res: Any, name: str) -> None:
        async with semaphore:
            with contextlib.suppress(ApiError):  # gone already (the garbage collector was first)
                await api.delete(res, name, PLAIN_NAMESPACE)

    await asyncio.gather(*(delete(TFJOBS, body["metadata"]["name"]) for body in created))
    deadline = time.monotonic() + 60 + jobs / 10
    for res in (PODGROUPS_V1BETA1, PODS, SERVICES):
        while leftovers := (await api.list_all(res, PLAIN_NAMESPACE))[0]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(leftovers)} {res.plural} of the plain phase are still there")
            await asyncio.gather(*(delete(res, item["metadata"]["name"]) for item in leftovers))
    return {
        "objects": len(children),
        "tfjob_create_ms": tfjobs_cpu / jobs * 1000,
        "tfjob_webhook_ms": tfjobs_webhook_cpu / jobs * 1000,
        "create_ms": server / len(children) * 1000,
        "webhook_ms": webhook / len(children) * 1000,
        "client_ms": client / len(children) * 1000,
        "seconds": seconds,
        "idle_wait_s": idle_wait,
    }


# The job created as the restarted controller's process starts, before it is ready: no controller
# has reconciled it, so it has no status, and it must be served before the resync of the others.
STARTING_JOB = "bench-while-starting"
# The job created once the restarted controller is ready (the figure the bench always had).
AFTER_RESTART_JOB = "bench-after-restart"


@contextlib.asynccontextmanager
async def _controller_starting(
    kubeconfig: str, workdir: Path, flags: Sequence[str], name: str
) -> AsyncIterator[tuple[asyncio.subprocess.Process, int]]:
    """``python -m controller`` as ``controller_process`` starts it, yielded as soon as it is
    spawned (not once ready), with its ops port; the loop stays free meanwhile, so the bench's
    watchers keep seeing what the starting controller creates."""
    ops_port = free_port()
    env = {**os.environ, "TFGANG_OPS_HOST": "127.0.0.1"}
    with (workdir / f"{name}.log").open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "controller", "--kubeconfig", kubeconfig, "--ops-port", str(ops_port),
            *flags, stdout=log, stderr=asyncio.subprocess.STDOUT, cwd=REPO, env=env,
        )  # fmt: skip
    try:
        yield process, ops_port
    finally:
        if process.returncode is None:
            process.terminate()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10):
                    await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()


async def _until_ready(
    process: asyncio.subprocess.Process, ops_port: int, within: float, name: str = "the restarted controller"
) -> None:
    """Poll the process's /readyz every 20 ms until it answers 200."""
    deadline = time.monotonic() + within
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1)) as session:
        while True:
            if process.returncode is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}; see its log")
            with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
                async with session.get(f"http://127.0.0.1:{ops_port}/readyz") as response:
                    if response.status == 200:
                        return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name} was not ready within {within:.0f} s")
            await asyncio.sleep(0.02)


async def _until_podgroup(podgroups: set[str], name: str, within: float) -> float:
    """The monotonic time the bench's PodGroup watch first saw ``name``'s PodGroup."""
    deadline = time.monotonic() + within
    while name not in podgroups:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name} got no PodGroup within {within:.0f} s")
        await asyncio.sleep(0.005)
    return time.monotonic()


async def _restart_phase(
    api: KubeApi,
    flags: Sequence[str],
    kubeconfig: str,
    workdir: Path,
    podgroups: set[str],
    jobs: int,
    profile: Path | None = None,
) -> dict[str, float]:
    """A new controller after the last was killed with every job still there: seconds until
    /readyz, its RSS then (a fresh process holding the same objects), and the seconds from ready
    until a job created then has its PodGroup.

    Also the goal's ordering: a job created right after the new process is spawned (before it is
    ready; no status, as if created while no controller ran) must get its PodGroup before the
    resync of the ``jobs`` that have a status is done. Its PodGroup is timed from its create and
    from the process start, with the controller's reconcile passes done by then (a FIFO would
    serve it after some ``jobs`` others), beside when the caches were synced and when the work
    queue was first empty after ready (every resync pass done). With ``profile``, py-spy samples the
    new controller from just after its start (its interpreter must be up first) until then."""
    started, started_at = time.monotonic(), time.time()
    # Ready can take a while at 10,000 jobs on a loaded machine; the bench reports how long. INFO
    # logs say when the caches were synced: /readyz may answer later, its loop busy with passes.
    name = "bench-controller-restarted"
    async with _controller_starting(kubeconfig, workdir, [*flags, "--log-level", "INFO"], name) as (
        process,
        ops_port,
    ):
        await api.create(TFJOBS, load_seed("normal", STARTING_JOB, NAMESPACE), NAMESPACE)
        starting_created = time.monotonic()

        async def starting_served() -> tuple[float, float]:
            seen = await _until_podgroup(podgroups, STARTING_JOB, within=600)
            with contextlib.suppress(OSError):  # the passes done by then, read at once
                text = await asyncio.to_thread(metrics_text, ops_port)
                passes = _metric_sum(
                    text, "controller_runtime_reconcile", "controller_runtime_reconcile_total"
                )
                return seen, passes
            return seen, float("nan")

        starting = asyncio.create_task(starting_served())
        profiling = contextlib.ExitStack()
        try:
            if profile is not None:
                # py-spy cannot attach before the new interpreter is up (about 0.3 s on this machine).
                await asyncio.sleep(max(0.0, 0.3 - (time.monotonic() - started)))
                profiling.enter_context(py_spy(process.pid, profile))
            await _until_ready(process, ops_port, within=300)
            ready = time.monotonic() - started
            ready_cpu = _cpu_seconds(process.pid)
            memory = _memory_kib(process.pid)
            await api.create(TFJOBS, load_seed("normal", AFTER_RESTART_JOB, NAMESPACE), NAMESPACE)
            created = time.monotonic()
            first_job = await _until_podgroup(podgroups, AFTER_RESTART_JOB, within=60) - created
            # The resync is done when the work queue is first empty (for a second) after ready.
            since_start = time.monotonic() - started
            resynced = since_start + await _until_queue_empty(ops_port, within=600)
            starting_seen, passes_before = await starting
        finally:
            profiling.close()
            starting.cancel()
    return {
        "synced_s": _synced_at(workdir / f"{name}.log") - started_at,
        "ready_s": ready,
        "ready_cpu_s": ready_cpu,
        "fresh_rss_mib": memory.get("VmRSS", 0) / 1024,
        "first_job_s": first_job,
        "starting_created_s": starting_created - started,
        "starting_podgroup_s": starting_seen - started,
        "starting_podgroup_from_create_s": starting_seen - starting_created,
        "starting_passes_before": passes_before,
        "resynced_s": resynced,
        "resynced_jobs": jobs,
    }


def _synced_at(log: Path) -> float:
    """The wall-clock time the controller logged its caches synced (NaN when it did not)."""
    for line in log.read_text().splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if str(record.get("message", "")).startswith("caches synced"):
                return datetime.fromisoformat(str(record["time"])).timestamp()
    return float("nan")


async def _watch_added(
    api: KubeApi,
    res: Any,
    seen: set[str],
    on_added: Callable[[str], Awaitable[None]] | None = None,
    namespace: str = NAMESPACE,
) -> None:
    """Collect the names of ``res`` objects as they appear (a watch, far cheaper than relisting)."""
    pending: set[asyncio.Task[None]] = set()
    resource_version = "0"
    while True:
        try:
            async for event in api.watch(
                res, namespace, resource_version=resource_version, timeout_seconds=60
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


async def _missing_report(api: KubeApi, jobs: int, seen: set[str], ops_port: int) -> str:
    """What the API server holds for the jobs whose PodGroup the bench never saw, and the
    controller's queue and error metrics: whether the bench or the controller lost them."""
    stored = {item["metadata"]["name"] for item in (await api.list_all(PODGROUPS_V1BETA1, NAMESPACE))[0]}
    missing = sorted({f"bench-{index:04d}" for index in range(jobs)} - seen)[:5]
    lines = [f"PodGroups stored: {len(stored)}; not seen by the bench: {missing}"]
    for name in missing:
        job = await api.get(TFJOBS, name, NAMESPACE)
        lines.append(f"{name}: PodGroup stored {name in stored}, status {json.dumps(job.get('status'))}")
    metrics = await asyncio.to_thread(metrics_text, ops_port)
    lines += [
        line for line in metrics.splitlines()
        if line.startswith(("workqueue_depth", "controller_runtime_reconcile_errors", "workqueue_unfinished"))
    ]
    return "\n".join(lines)


def _admitter(api: KubeApi, namespace: str = NAMESPACE) -> Callable[[str], Awaitable[None]]:
    """Play Volcano: a new PodGroup goes Inqueue."""

    async def admit(name: str) -> None:
        with contextlib.suppress(ApiError):
            await api.patch(
                PODGROUPS_V1BETA1,
                name,
                {"status": {"phase": "Inqueue"}},
                namespace,
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


def _metric_sum(metrics: str, family_name: str, sample_name: str | None = None) -> float:
    """The sum of a metric family's samples in the controller's exposition, over all labels
    (only the samples called ``sample_name`` if given, e.g. a counter's ``_total``)."""
    return sum(
        sample.value
        for family in text_string_to_metric_families(metrics)
        if family.name == family_name
        for sample in family.samples
        if sample_name is None or sample.name == sample_name
    )


async def _until_queue_empty(ops_port: int, steady: float = 1.0, within: float = 300.0) -> float:
    """Seconds until the controller's work queue has stayed empty for ``steady`` seconds."""
    started = empty_since = time.monotonic()
    while time.monotonic() - started < within:
        text = await asyncio.to_thread(metrics_text, ops_port)
        depth = _metric_sum(text, "workqueue_depth")
        now = time.monotonic()
        if depth:
            empty_since = now
        elif now - empty_since >= steady:
            return empty_since - started
        await asyncio.sleep(0.1)
    raise TimeoutError(f"the controller's work queue was not empty within {within:.0f} s")


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


@contextlib.contextmanager
def _api_server(kind: str) -> Iterator[tuple[Any, Callable[[], float]]]:
    """The API server to measure against, and a reader of its CPU seconds so far.

    ``sandbox``: the sandbox API server on its own thread of this process (that thread's CPU).
    ``kube-apiserver``: a real kube-apiserver with etcd and kube-controller-manager
    (``sandbox.realapiserver``, built by ``scripts/kube-apiserver``), child processes of this one;
    its CPU is kube-apiserver's and etcd's together.
    """
    if kind == SANDBOX:
        with start_apiserver() as handle:
            yield handle, _thread_cpu_seconds("sandbox-apiserver")
        return
    try:
        from sandbox.realapiserver import RealApiServer
    except ImportError as exc:
        raise SystemExit(
            f"--apiserver {KUBE_APISERVER} needs sandbox/realapiserver.py and a kube-apiserver built by "
            f"scripts/kube-apiserver: {exc}"
        ) from exc
    server = RealApiServer()
    server.start()
    try:
        yield server, _children_cpu_seconds(("kube-apiserver", "etcd"))
    finally:
        server.stop()


def _children_cpu_seconds(names: Sequence[str]) -> Callable[[], float]:
    """A reader of the CPU time of this process's child processes with these command names."""
    own = str(os.getpid())
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            comm, rest = stat.read_text().split(" (", 1)[1].rsplit(") ", 1)
            if comm in names and rest.split()[1] == own:
                pids.append(int(stat.parent.name))
    if not pids:
        raise SystemExit(f"no child process named {' or '.join(names)} to measure")
    return lambda: sum(_cpu_seconds(pid) for pid in pids)


async def run(
    jobs: int,
    samples: int,
    workers: int,
    profile: str | None = None,
    apiserver_kind: str = "sandbox",
    pprof_dir: Path | None = None,
    restart_profile: Path | None = None,
) -> dict[str, Any]:
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"tfgang-bench-{os.getpid()}"
    workdir.mkdir(parents=True, exist_ok=True)
    with _api_server(apiserver_kind) as (apiserver, server_cpu):
        _token, controller_kubeconfig = apiserver.add_user("tfgang-controller")
        client = await make_api_client(str(apiserver.kubeconfig))
        api = KubeApi(client, qps=5000.0, burst=5000)
        # The plain client creates the children as a user of the controller's kind (a client
        # certificate, no privileged group), not as the admin: kube-apiserver checks such a
        # user's certificate on every request and puts its requests through fair queuing, which it
        # skips for system:masters, so the admin's creates were cheaper than anyone else's.
        _token, plain_kubeconfig = apiserver.add_user("bench-plain-client")
        creator = KubeApi(await make_api_client(plain_kubeconfig), qps=5000.0, burst=5000)
        # The webhook before anything is created, so that both phases' pods go through it.
        async with _webhook(api, str(apiserver.kubeconfig), workdir) as webhook_pid:
            webhook_cpu = functools.partial(_cpu_seconds, webhook_pid)
            # A warm-up round first, not counted: a fresh API server's first thousands of writes cost
            # it more (kube-apiserver's heap and caches still growing), which flattered the ratio.
            in_process = apiserver_kind == SANDBOX
            await _plain_phase(
                api, max(1, jobs // 5), server_cpu, in_process, webhook_cpu, creator=creator
            )
            plain = await _plain_phase(
                api, jobs, server_cpu, in_process, webhook_cpu, creator=creator,
                pprof=lambda: _apiserver_pprof(apiserver, pprof_dir and pprof_dir / "plain.pprof"),
            )
            await creator.close()
            podgroups: set[str] = set()
            pods: set[str] = set()
            watchers = [
                asyncio.create_task(_watch_added(api, PODGROUPS_V1BETA1, podgroups, _admitter(api))),
                asyncio.create_task(_watch_added(api, PODS, pods)),
            ]
            try:
                controller_flags = (
                    "--workers",
                    str(workers),
                    "--kube-api-qps",
                    "5000",
                    "--kube-api-burst",
                    "5000",
                    "--log-level",
                    "WARNING",
                )
                with controller_process(
                    str(controller_kubeconfig), workdir, *controller_flags, name="bench-controller"
                ) as (process, ops_port):
                    idle_wait = await _until_server_idle(server_cpu)
                    apiserver.clear_request_log()
                    profiling = contextlib.ExitStack()
                    if profile is not None:
                        profiling.enter_context(py_spy(process.pid, Path(profile)))
                    user_before, system_before = _user_system_seconds(process.pid)
                    server_before, webhook_before = server_cpu(), webhook_cpu()
                    started = time.monotonic()
                    profiled = _apiserver_pprof(apiserver, pprof_dir and pprof_dir / "controller.pprof")
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
                            report = await _missing_report(api, jobs, podgroups, ops_port)
                            raise TimeoutError(
                                f"only {len(podgroups)} PodGroups and {len(pods)} pods after 600s\n{report}"
                            )
                        await asyncio.sleep(0.05)
                    all_exist = time.monotonic() - started
                    controller_cpu = _cpu_seconds(process.pid)
                    own_cpu = time.process_time()
                    await asyncio.sleep(2.0)  # let the status writes of the last jobs land
                    user_after, system_after = _user_system_seconds(process.pid)
                    burst_controller_cpu = user_after + system_after - user_before - system_before
                    burst_controller_system = system_after - system_before
                    burst_server_cpu = server_cpu() - server_before
                    burst_webhook_cpu = webhook_cpu() - webhook_before
                    burst_memory = _memory_kib(process.pid)
                    burst_passes = _metric_sum(
                        await asyncio.to_thread(metrics_text, ops_port),
                        "controller_runtime_reconcile",
                        "controller_runtime_reconcile_total",
                    )
                    profiling.close()
                    if profiled is not None:
                        await profiled

                    # Idle latency: one job at a time, the controller otherwise quiet. At 10,000 jobs the
                    # passes that write the burst's held-back counts are still queued two seconds after
                    # the last pod exists: a transition measured then waits behind them.
                    drained_s = await _until_queue_empty(ops_port)
                    latencies: list[float] = []
                    for index in range(min(samples, jobs)):
                        job = f"bench-{index:04d}"
                        pods_of_job = [f"{job}-ps-0", *(f"{job}-worker-{i}" for i in range(3))]
                        latencies.append(await _transition(api, job, pods_of_job, "Running", "Running"))
                        latencies.append(await _transition(api, job, pods_of_job, "Succeeded", "Succeeded"))
                    memory = _memory_kib(process.pid)
                    records = [r for r in apiserver.request_log() if r.user == "tfgang-controller"]
                    budget = await writebudget.measure(api, apiserver, "tfgang-controller")
                    process.kill()  # kill -9: no graceful stop, as when a node dies
                    process.wait()
                try:
                    restart: dict[str, float] | None = await _restart_phase(
                        api, controller_flags, str(controller_kubeconfig), workdir, podgroups, jobs,
                        profile=restart_profile,
                    )  # fmt: skip
                except (TimeoutError, RuntimeError) as exc:  # report the rest of the run all the same
                    print(f"restart phase failed: {exc}", flush=True)
                    restart = None
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
        "drained_s": drained_s,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": _percentile(latencies, 0.99) * 1000,
        "requests_per_job": len(records) / jobs,
        "burst_passes_per_job": burst_passes / jobs,
        "idle_wait_s": idle_wait,
        "writes_per_job": writes / jobs,
        "events_per_job": events / jobs,
        "by_verb": dict(by_verb),
        "controller_cpu_s": controller_cpu,
        "server_and_load_cpu_s": own_cpu,
        "load_average": os.getloadavg(),
        "plain": plain,
        "objects": plain["objects"],
        "controller_ms_per_object": burst_controller_cpu / plain["objects"] * 1000,
        "controller_system_ms_per_object": burst_controller_system / plain["objects"] * 1000,
        "server_ms_per_object": burst_server_cpu / plain["objects"] * 1000,
        "webhook_ms_per_object": burst_webhook_cpu / plain["objects"] * 1000,
        "burst_rss_mib": burst_memory.get("VmRSS", 0) / 1024,
        "rss_mib": memory.get("VmRSS", 0) / 1024,
        "peak_rss_mib": memory.get("VmHWM", 0) / 1024,
        "write_budget": budget,
        "restart": restart,
        "apiserver": apiserver_kind,
    }


def _verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def render(result: dict[str, Any]) -> str:
    # The bench's own TFJob creates fall in the controller's phase; the plain phase measured what
    # one costs, so the controller's share is what is left without them.
    tfjob_creates_ms = result["plain"]["tfjob_create_ms"] * result["jobs"] / result["objects"]
    controller_share_ms = result["server_ms_per_object"] - tfjob_creates_ms
    server_ratio = controller_share_ms / result["plain"]["create_ms"]
    all_in_ratio = result["server_ms_per_object"] / result["plain"]["create_ms"]
    plain_rate = result["plain"]["objects"] / result["plain"]["seconds"]
    restart = result["restart"] or dict.fromkeys(
        ("synced_s", "ready_s", "ready_cpu_s", "fresh_rss_mib", "first_job_s", "starting_created_s",
         "starting_podgroup_s", "starting_podgroup_from_create_s", "starting_passes_before", "resynced_s"),
        float("nan"),
    )  # fmt: skip
    at_scale = result["jobs"] >= 10_000
    restart_verdict = f": {_verdict(restart['ready_s'] + restart['first_job_s'] <= 10)}" if at_scale else ""
    ready_verdict = f": {_verdict(restart['ready_s'] <= 10)}" if at_scale else ""
    # Served before the resync: its PodGroup came before the work queue first emptied, and fewer
    # passes than there are jobs with status were done by then (a FIFO would have done them all).
    # Judged at scale only: with fewer jobs the whole resync takes less than the PodGroup's create
    # and its watch event, so neither figure can tell the order.
    served_first = (
        restart["starting_podgroup_s"] < restart["resynced_s"]
        and restart["starting_passes_before"] < result["jobs"]
    )
    rss_limit = 200 if result["jobs"] <= 1000 else 1024
    rss_goal = f"<= {rss_limit} MiB: {_verdict(result['burst_rss_mib'] <= rss_limit)}"
    verbs = ", ".join(f"{verb} {count}" for verb, count in sorted(result["by_verb"].items()))
    kind = result["apiserver"]
    begin, end = section_markers(_section(kind, result["jobs"]))
    server = "sandbox API server" if kind == SANDBOX else "kube-apiserver (v1.20, with etcd)"
    return "\n".join(
        [
            begin,
            ("## Controller" if kind == SANDBOX else "## Controller on a real kube-apiserver")
            + ("" if result["jobs"] == 1000 else f", {result['jobs']:,} TFJobs"),
            "",
            f"`python bench/controller.py --jobs {result['jobs']} --workers {result['workers']} --apiserver "
            f"{kind}` on {os.cpu_count()} cores ({platform.python_implementation()} "
            f"{platform.python_version()}); the {server}, the controller process and the load generator "
            "(playing Volcano and the kubelet) share the machine, with the real tfgang webhook (its own "
            "process, registered with the chart's configurations) admitting the pods and TFJobs of both "
            "phases.",
            "",
            "| measure | result | target |",
            "|---|---|---|",
            f"| time until every PodGroup and pod of {result['jobs']} TFJobs (4 replicas) exists | "
            f"{result['all_exist_s']:.1f} s (all TFJobs created after {result['created_all_s']:.1f} s) "
            "| <= 60 s |",
            f"| the burst's remaining passes: work queue empty after (from 2 s after the last pod) | "
            f"{result['drained_s']:.1f} s | |",
            f"| last pod change -> new condition, p50 ({result['latency_samples']} transitions, idle: "
            f"the work queue empty) | {result['p50_ms']:.0f} ms | |",
            f"| last pod change -> new condition, p99 | {result['p99_ms']:.0f} ms | <= 100 ms |",
            f"| controller API requests per job, all included | {result['requests_per_job']:.1f} | |",
            f"| reconcile passes per job during the burst | {result['burst_passes_per_job']:.1f} | |",
            f"| of which writes to the job's objects (PodGroup, pods, services, status) | "
            f"{result['writes_per_job']:.1f} | |",
            f"| of which Event writes (aggregated) | {result['events_per_job']:.1f} | |",
            f"| controller CPU per object created ({result['objects']} PodGroups, pods and services) | "
            f"{result['controller_ms_per_object']:.2f} ms | <= 0.8 ms: "
            f"{_verdict(result['controller_ms_per_object'] <= 0.8)} |",
            f"| of which in the kernel (system time: socket reads and writes, waits, wake-ups) | "
            f"{result['controller_system_ms_per_object']:.2f} ms | |",
            f"| the plain client's own CPU per create (KubeApi, the same client, its watchers and "
            f"admissions included) | {result['plain']['client_ms']:.2f} ms | |",
            f"| API server CPU per object, the controller creating them (all its requests included, "
            f"calling the webhook, the bench's TFJob creates and Volcano-like PodGroup admissions) | "
            f"{result['server_ms_per_object']:.2f} ms | |",
            f"| the same without the bench's TFJob creates (at the plain phase's cost of one) | "
            f"{controller_share_ms:.2f} ms | |",
            f"| API server CPU per object, a plain concurrent client creating the same objects "
            f"(calling the webhook and Volcano-like admissions included) | "
            f"{result['plain']['create_ms']:.2f} ms ({plain_rate:.0f} creates/s; a TFJob create "
            f"{result['plain']['tfjob_create_ms']:.2f} ms) | |",
            f"| API server CPU, controller / plain client, without the TFJob creates (with them) | "
            f"{server_ratio:.2f}x ({all_in_ratio:.2f}x) | <= 1.5x: {_verdict(server_ratio <= 1.5)} |",
            f"| webhook CPU per object, the controller creating them (its pods' mutations and the "
            f"bench's TFJob validations) | {result['webhook_ms_per_object']:.2f} ms | |",
            f"| webhook CPU per object, the plain client creating them (a TFJob create's validation) | "
            f"{result['plain']['webhook_ms']:.2f} ms ({result['plain']['tfjob_webhook_ms']:.2f} ms) | |",
            f"| controller RSS right after the burst (every pod created, status written) | "
            f"{result['burst_rss_mib']:.0f} MiB | {rss_goal} |",
            f"| RSS of a controller started afresh with the same objects (after kill -9 of the first) | "
            f"{restart['fresh_rss_mib']:.0f} MiB | |",
            f"| that restarted controller: ready (process start to /readyz; its CPU meanwhile) | "
            f"{restart['ready_s']:.1f} s ({restart['ready_cpu_s']:.1f} s CPU) | "
            f"<= 10 s at 10,000 jobs{ready_verdict} |",
            f"| of which until its caches were synced (its log), the workers starting then | "
            f"{restart['synced_s']:.1f} s | |",
            f"| a job created as that controller's process started ({restart['starting_created_s']:.2f} s "
            f"after; no status, before ready): its PodGroup, from its create (from the process start) | "
            f"{restart['starting_podgroup_from_create_s']:.1f} s ({restart['starting_podgroup_s']:.1f} s), "
            f"{restart['starting_passes_before']:.0f} reconcile passes done by then | before the resync of "
            f"the {result['jobs']:,} jobs with status{': ' + _verdict(served_first) if at_scale else ''} |",
            f"| the resync of the {result['jobs']:,} jobs with status done (work queue first empty after "
            f"ready), from the process start | {restart['resynced_s']:.1f} s | |",
            f"| then a new job's PodGroup, from its create | {restart['first_job_s'] * 1000:.0f} ms | "
            f"ready + this <= 10 s at 10,000 jobs{restart_verdict} |",
            f"| controller RSS at the end (peak) | {result['rss_mib']:.0f} MiB "
            f"({result['peak_rss_mib']:.0f} MiB) | "
            f"<= {rss_limit} MiB |",
            *writebudget.rows(result["write_budget"]),
            "",
            "Each phase began once the API server had used under 15 % of a core for 2 s: after "
            f"{result['plain']['idle_wait_s']:.1f} s for the plain client's, "
            f"{result['idle_wait_s']:.1f} s for the controller's (the plain phase's objects deleted).",
            "",
            "Load average (1/5/15 min) at the end: "
            + "/".join(f"{value:.1f}" for value in result["load_average"])
            + " (anything above 2 means other work shared the two cores).",
            "",
            f"CPU until every pod existed: controller {result['controller_cpu_s']:.1f} s, "
            f"{'sandbox API server and load generator (one process)' if kind == SANDBOX else 'bench'} "
            f"{result['server_and_load_cpu_s']:.1f} s.",
            "",
            f"Controller requests by verb and resource: {verbs}.",
            end,
        ]
    )


def _section(kind: str, jobs: int) -> str:
    """Each API server and scale keeps its own section of docs/performance.md."""
    name = "controller" if kind == SANDBOX else "controller-kube-apiserver"
    return name if jobs == 1000 else f"{name}-{jobs}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=50, help="jobs whose transitions are timed")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument(
        "--apiserver",
        choices=(SANDBOX, KUBE_APISERVER),
        default=SANDBOX,
        help="the sandbox's API server, or a real kube-apiserver with etcd (scripts/kube-apiserver)",
    )
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md")
    parser.add_argument(
        "--apiserver-pprof",
        metavar="DIR",
        help="with kube-apiserver: its Go CPU profile for 15 s of each phase, to DIR/plain.pprof and "
        "DIR/controller.pprof (read with `go tool pprof -top`)",
    )
    parser.add_argument(
        "--profile",
        metavar="PATH",
        help="sample the controller with py-spy during the burst",
    )
    parser.add_argument(
        "--profile-restart",
        metavar="PATH",
        help="sample the restarted controller with py-spy from its start until its resync is done",
    )
    args = parser.parse_args()
    # The controller's own loop (uvloop), so the plain client's CPU per create is comparable with it.
    pprof_dir = Path(args.apiserver_pprof) if args.apiserver_pprof else None
    if pprof_dir is not None:
        pprof_dir.mkdir(parents=True, exist_ok=True)
    restart_profile = Path(args.profile_restart) if args.profile_restart else None
    result = eventloop.run(
        run(args.jobs, args.samples, args.workers, args.profile, args.apiserver, pprof_dir, restart_profile)
    )
    if args.profile:
        print(f"py-spy profile of the controller during the burst (stacks in {args.profile}):")
        print(profile_summary(Path(args.profile).read_text()))
    if args.profile_restart and Path(args.profile_restart).exists():
        print(f"py-spy profile of the restarted controller, start to resync done ({args.profile_restart}):")
        print(profile_summary(Path(args.profile_restart).read_text()))
    section = render(result)
    print(section)
    if not args.no_write:
        write_section(REPO / "docs" / "performance.md", _section(args.apiserver, args.jobs), section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
