"""The upgrade rig: tfgang's webhook replicas behind a balancer, registered in a real kube-apiserver,
taken through what a cluster does to them while TFJob pods are created at a steady rate.

Real parts, each a process on loopback:

- kube-apiserver with etcd (``sandbox.realapiserver``; ``bin_dir`` picks the release);
- Debian's ``haproxy`` playing the webhook's Service: TCP mode (TLS passes through to the replicas),
  each replica health-checked on its ops port's ``/readyz`` every second, as a Service's endpoints
  follow readiness; three server slots, so that a third replica can join during a rolling upgrade;
- ``tfgang-webhook`` replicas (``python -m webhook``) in selfManaged mode: they create the
  certificate Secret, inject its CA into the chart's two webhook configurations (registered by the
  balancer's URL, ``https://localhost:<port>``: the replicas' Service name is ``localhost``, so the
  certificate they issue names it), and renew it;
- two ``tfgang-controller --leader-elect`` processes (in a namespace of their own, so that they
  never touch the load's pods).

The load: pods of one TFJob (its labels and controller ownerReference, so the mutating webhook
really mutates them: ``schedulerName`` and ``TF_CONFIG`` are checked on every pod created),
created through kube-apiserver at a fixed rate whatever the answers take (an open loop), each
deleted again once created so that etcd stays small. A create that cannot reach kube-apiserver
(while it restarts) is tried again; every answer kube-apiserver gives is counted: created and
mutated, refused (``failed calling webhook`` and any other error), or timed out.

The sequence (``STEPS``): steady load; a rolling upgrade as the chart's Deployment does it
(maxSurge 1, maxUnavailable 0: a new replica started and ready in the balancer, then the oldest
SIGTERMed through its shutdown delay, twice); the serving certificate rotated by the replicas
themselves; kube-apiserver restarted; a replica killed -9 and replaced; the controller's leader
SIGTERMed; then steady load until the run has made ``min_creations`` pods. Each step's figures
count the creates begun during it.

``bench/upgrade.py`` runs it and prints the figures docs/reliability.md carries;
``test_upgrade_under_load.py`` runs a short version under ``pytest -m chaos``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import csv
import dataclasses
import datetime
import io
import logging
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from certs.secret import StoredCertificates, decode_secret_data, encode_secret_data
from certs.serving import dns_names_of, issue_serving_certificate
from controller.resources import TFJOBS
from kube.api import KubeApi
from kube.client import make_api_client
from kube.errors import AlreadyExists, ApiError, ConnectionFailed, NotFound
from kube.resources import (
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    PODS,
    SECRETS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
)
from sandbox.ports import free_port
from sandbox.realapiserver import RealApiServer, RealApiServerOptions
from sandbox.webhook_configs import OPERATOR_NAMESPACE, webhook_configurations
from tests.chaos.scenarios import LEADER_FLAGS
from tests.webhook.admission_cases import load_cases

logger = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]
LOAD_NAMESPACE = "upgrade-load"
CONTROLLER_NAMESPACE = "upgrade-controller"
SECRET = "tfgang-webhook-tls"
# The balancer is reached as https://localhost:<port>; a replica's self-managed certificate names
# its Service (svc, svc.ns, svc.ns.svc), so the replicas are told their Service is "localhost".
SERVICE = "localhost"
SLOTS = 3  # two replicas, and a third while a rolling upgrade surges
HEALTH_INTERVAL = 1.0
SEED = load_cases("mutate-seed-ps-0")[0]
READY_WITHIN = 60.0


@dataclass(frozen=True)
class RigOptions:
    bin_dir: Path | None = None
    """kube-apiserver, etcd and kube-controller-manager; ``scripts/kube-apiserver build`` when None."""
    rate: float = 60.0
    """Pod creations started per second, whatever the answers take."""
    min_creations: int = 10_000
    """The last, steady step lasts until the run has begun this many creations."""
    settle: float = 10.0
    """Seconds of load after each step's action before the next step begins."""
    shutdown_delay: float = 5.0
    """The replicas' ``--shutdown-delay`` (the chart's ``webhook.shutdownDelaySeconds``)."""
    request_timeout: float = 30.0
    """A create with no answer from kube-apiserver within this is counted timed out."""
    workdir: Path | None = None
    """Logs and configuration; a temporary directory (removed afterwards) when None."""
    webhook_source: Path | None = None
    """A checkout whose ``webhook`` package the replicas run (to compare with an older one);
    this repository's when None."""


@dataclass
class StepFigures:
    name: str
    creations: int = 0
    created: int = 0
    failed: int = 0
    timed_out: int = 0
    not_mutated: int = 0
    api_waits: int = 0
    """Creates that found kube-apiserver away (restarting) and were tried again."""
    longest_seconds: float = 0.0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    struck_at: float | None = None
    """When the step's fault struck (epoch seconds): the SIGKILL of the kill -9 step."""


@dataclass(frozen=True)
class CreateRecord:
    number: int
    step: str
    began: float
    answered: float
    outcome: str
    message: str


@dataclass
class RunFigures:
    steps: list[StepFigures]
    seconds: float
    workdir: str
    records: list[CreateRecord] = field(default_factory=list)

    @property
    def creations(self) -> int:
        return sum(step.creations for step in self.steps)

    @property
    def failed(self) -> int:
        return sum(step.failed for step in self.steps)

    @property
    def timed_out(self) -> int:
        return sum(step.timed_out for step in self.steps)

    @property
    def not_mutated(self) -> int:
        return sum(step.not_mutated for step in self.steps)


def cut_by_sigkill(figures: RunFigures, record: CreateRecord) -> bool:
    """Whether ``record`` failed as only a SIGKILL makes a create fail: an EOF from a review in
    flight on the replica killed -9 (begun before the kill, answered within a second of it)."""
    struck = [step.struck_at for step in figures.steps if step.struck_at is not None]
    return (
        record.outcome == "failed"
        and "EOF" in record.message
        and any(record.began <= at <= record.answered <= at + 1.0 for at in struck)
    )


def unexplained(figures: RunFigures) -> list[CreateRecord]:
    """Every create that was not created and mutated, but for those ``cut_by_sigkill``."""
    return [
        record
        for record in figures.records
        if record.outcome != "created" and not cut_by_sigkill(figures, record)
    ]


# -- processes ----------------------------------------------------------------------------------


def _python(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def _spawn(argv: list[str], log_path: Path, cwd: Path = REPO) -> subprocess.Popen[bytes]:
    """A child process writing to ``log_path`` (started in an instant: no need to leave the loop);
    ``python -m`` runs the package found in ``cwd`` first."""
    with log_path.open("ab") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd)


async def _wait_for(check: Callable[[], Awaitable[bool]], within: float, what: str) -> float:
    """Seconds until ``check`` held; ``TimeoutError`` naming ``what`` after ``within``."""
    started = time.monotonic()
    while not await check():
        if time.monotonic() - started > within:
            raise TimeoutError(f"{what} did not happen within {within:.0f}s")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


@dataclass
class Replica:
    slot: int
    name: str
    process: subprocess.Popen[bytes]
    port: int
    ops_port: int


class Balancer:
    """haproxy in TCP mode with ``SLOTS`` server slots on fixed ports; a slot's replica comes and goes."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.slots = [(free_port(), free_port()) for _ in range(SLOTS)]
        self.socket_path = workdir / "haproxy.sock"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"https://{SERVICE}:{self.port}"

    def config(self) -> str:
        servers = "\n".join(
            f"    server slot{index} 127.0.0.1:{port} check port {ops_port}"
            for index, (port, ops_port) in enumerate(self.slots)
        )
        return f"""global
    maxconn 4096
    stats socket {self.socket_path} mode 600 level admin
    # One line per connection, with how it ended (haproxy.log): who closed it, and when.
    log stdout format raw daemon

defaults
    mode tcp
    log global
    option tcplog
    timeout connect 2s
    # Above kube-apiserver's 90 s idle timeout: the balancer never closes a kept-alive connection.
    timeout client 150s
    timeout server 150s
    timeout check 1s

frontend webhook
    bind 127.0.0.1:{self.port}
    default_backend replicas

backend replicas
    balance roundrobin
    # A Service's endpoints follow readiness: /readyz on the ops port, every second.
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter {HEALTH_INTERVAL:g}s fall 1 rise 1
{servers}
"""

    def start(self) -> None:
        haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        if not os.access(haproxy, os.X_OK):
            raise RuntimeError("haproxy is not installed: apt-get install haproxy")
        config = self.workdir / "haproxy.cfg"
        config.write_text(self.config())
        log = (self.workdir / "haproxy.log").open("ab")
        self._process = subprocess.Popen(
            [haproxy, "-db", "-f", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(10)
        self._process = None

    async def states(self) -> dict[int, str]:
        """Each slot's state as haproxy sees it (UP, DOWN, ...), from its runtime API."""
        reader, writer = await asyncio.open_unix_connection(str(self.socket_path))
        try:
            writer.write(b"show stat\n")
            await writer.drain()
            text = (await reader.read()).decode()
        finally:
            writer.close()
        rows = csv.reader(io.StringIO(text.lstrip("# ")))
        header = next(rows)
        states = {}
        for row in rows:
            record = dict(zip(header, row, strict=False))
            name = record.get("svname", "")
            if record.get("pxname") == "replicas" and name.startswith("slot"):
                states[int(name.removeprefix("slot"))] = record.get("status", "").split(" ")[0]
        return states

    async def wait_state(self, slot: int, state: str, within: float = READY_WITHIN) -> float:
        async def reached() -> bool:
            with contextlib.suppress(OSError):
                return (await self.states()).get(slot) == state
            return False

        return await _wait_for(reached, within, f"haproxy slot{slot} {state}")


class Rig:
    """Everything of the module docstring, started by ``running_rig``."""

    def __init__(self, options: RigOptions, workdir: Path) -> None:
        self.options = options
        self.workdir = workdir
        self.apiserver = RealApiServer(
            RealApiServerOptions(bin_dir=options.bin_dir, workdir=workdir / "kube")
        )
        self.balancer = Balancer(workdir)
        self.replicas: list[Replica] = []
        self.controllers: list[tuple[subprocess.Popen[bytes], int]] = []
        self._started = 0
        self._controllers_started = 0
        self.controller_restarts = 0
        self.api: KubeApi | None = None
        self.session: aiohttp.ClientSession | None = None

    # -- replicas -------------------------------------------------------------------------------

    def _free_slot(self) -> int:
        used = {replica.slot for replica in self.replicas}
        return next(slot for slot in range(SLOTS) if slot not in used)

    async def start_replica(self) -> tuple[Replica, float]:
        """A new replica in a free slot, once haproxy routes to it; and the seconds that took."""
        slot = self._free_slot()
        port, ops_port = self.balancer.slots[slot]
        self._started += 1
        name = f"webhook-{self._started}"
        cert_dir = self.workdir / name / "certs"
        cert_dir.mkdir(parents=True)
        process = _spawn(
            _python(
                "webhook",
                "--kubeconfig", self.apiserver.kubeconfig,
                "--cert-dir", str(cert_dir),
                "--host", "127.0.0.1", "--port", str(port), "--ops-port", str(ops_port),
                "--shutdown-delay", f"{self.options.shutdown_delay:g}",
                "--self-managed", "--cert-secret", SECRET, "--cert-secret-namespace", OPERATOR_NAMESPACE,
                "--service-name", SERVICE,
                "--mutating-webhook-configuration", "tfgang-mutating",
                "--validating-webhook-configuration", "tfgang-validating",
                # Rounds every 2 s (the chart: 600 s), so a rotation is seen within the step.
                "--cert-check-interval", "2",
            ),
            self.workdir / f"{name}.log",
            self.options.webhook_source or REPO,
        )  # fmt: skip
        replica = Replica(slot, name, process, port, ops_port)
        self.replicas.append(replica)
        started = time.monotonic()
        await self.balancer.wait_state(slot, "UP")
        return replica, time.monotonic() - started

    async def terminate_replica(self, replica: Replica) -> tuple[float, float]:
        """SIGTERM, as the kubelet sends it: the seconds until haproxy marked it down and until it exited."""
        started = time.monotonic()
        replica.process.send_signal(signal.SIGTERM)
        down = await self.balancer.wait_state(replica.slot, "DOWN")
        await asyncio.to_thread(replica.process.wait, 60)
        self.replicas.remove(replica)
        if replica.process.returncode != 0:
            raise RuntimeError(f"{replica.name} exited with {replica.process.returncode} after SIGTERM")
        return down, time.monotonic() - started

    async def kill_replica(self, replica: Replica) -> float:
        """SIGKILL, as a lost node: the seconds until haproxy marked it down."""
        replica.process.kill()
        await asyncio.to_thread(replica.process.wait, 10)
        self.replicas.remove(replica)
        return await self.balancer.wait_state(replica.slot, "DOWN")

    # -- controllers ----------------------------------------------------------------------------

    def restart_exited_controllers(self) -> int:
        """Start again each controller that exited on its own (one that lost its Lease exits, and
        its pod's container is restarted): how many."""
        exited = [entry for entry in self.controllers if entry[0].poll() is not None]
        for entry in exited:
            self.controllers.remove(entry)
            self.start_controller()
        return len(exited)

    async def supervise_controllers(self) -> None:
        while True:
            self.controller_restarts += self.restart_exited_controllers()
            await asyncio.sleep(0.5)

    def start_controller(self) -> None:
        self._controllers_started += 1
        index = self._controllers_started
        ops_port = free_port()
        process = _spawn(
            _python(
                "controller",
                "--kubeconfig", self.apiserver.kubeconfig, "--ops-host", "127.0.0.1",
                "--ops-port", str(ops_port), "--namespace", CONTROLLER_NAMESPACE,
                "--identity", f"controller-{index}", *LEADER_FLAGS,
            ),
            self.workdir / f"controller-{index}.log",
        )  # fmt: skip
        self.controllers.append((process, ops_port))

    async def is_leader(self, ops_port: int) -> bool:
        assert self.session is not None
        try:
            async with self.session.get(f"http://127.0.0.1:{ops_port}/metrics") as answer:
                text = await answer.text()
        except aiohttp.ClientError:
            return False
        return "tfgang_controller_is_leader 1.0" in text

    async def leader(self) -> tuple[subprocess.Popen[bytes], int]:
        found: list[tuple[subprocess.Popen[bytes], int]] = []

        async def one_leads() -> bool:
            found[:] = [c for c in self.controllers if c[0].poll() is None and await self.is_leader(c[1])]
            return len(found) == 1

        await _wait_for(one_leads, READY_WITHIN, "one controller leading")
        return found[0]

    # -- certificates ---------------------------------------------------------------------------

    async def secret(self) -> tuple[dict[str, Any], StoredCertificates]:
        assert self.api is not None
        secret = await self.api.get(SECRETS, SECRET, OPERATOR_NAMESPACE)
        return secret, decode_secret_data(secret["data"])

    async def make_certificate_due(self) -> bytes:
        """Replace the Secret's serving certificate with one, from the same CA, due for renewal
        (valid one more day; the replicas renew 30 days ahead), as time would; its PEM."""
        assert self.api is not None
        secret, stored = await self.secret()
        assert stored.ca is not None, "a self-managed Secret keeps its CA's key"
        # Issued 40 days ago for 41: due, as its last day has come (a fresh one-day certificate
        # would not be: the renewal margin is at most a third of the lifetime).
        issued = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=40)
        names = dns_names_of(stored.serving.cert_pem)
        due = issue_serving_certificate(stored.ca, names, valid_days=41, now=issued)
        due = type(due)(due.cert_pem, due.key_pem, stored.serving.ca_pem, due.not_after)
        secret["data"] = {**secret["data"], **encode_secret_data(due, stored.ca)}
        await self.api.replace(SECRETS, SECRET, secret, OPERATOR_NAMESPACE)
        return due.cert_pem

    async def served_certificates(self) -> list[str]:
        """The leaf each live replica presents, as PEM."""

        def fetch(port: int) -> str:
            return ssl.get_server_certificate(("127.0.0.1", port), timeout=5)

        return [await asyncio.to_thread(fetch, replica.port) for replica in self.replicas]


@contextlib.asynccontextmanager
async def running_rig(options: RigOptions) -> AsyncIterator[Rig]:
    scratch = None
    if options.workdir is None:
        scratch = tempfile.TemporaryDirectory(prefix="tfgang-upgrade-rig-")
        workdir = Path(scratch.name)
    else:
        workdir = options.workdir
        workdir.mkdir(parents=True, exist_ok=True)
    rig = Rig(options, workdir)
    try:
        await asyncio.to_thread(rig.apiserver.start)
        client = await make_api_client(rig.apiserver.kubeconfig)
        rig.api = KubeApi(client, qps=10_000, burst=10_000, request_timeout=options.request_timeout)
        rig.session = aiohttp.ClientSession()
        for namespace in (OPERATOR_NAMESPACE, LOAD_NAMESPACE, CONTROLLER_NAMESPACE):
            await rig.api.create(
                NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        # The chart's configurations by the balancer's URL; the replicas inject the caBundle.
        for configuration in webhook_configurations(rig.balancer.url, ""):
            for webhook in configuration["webhooks"]:
                webhook["clientConfig"].pop("caBundle")
            resource = (
                MUTATING_WEBHOOK_CONFIGURATIONS
                if configuration["kind"] == "MutatingWebhookConfiguration"
                else VALIDATING_WEBHOOK_CONFIGURATIONS
            )
            await rig.api.create(resource, configuration)
        rig.balancer.start()
        for _ in range(2):
            await rig.start_replica()
        for _ in range(2):
            rig.start_controller()
        await rig.leader()
        supervising = asyncio.create_task(rig.supervise_controllers())
        try:
            yield rig
        finally:
            supervising.cancel()
    finally:
        for replica in list(rig.replicas):
            with contextlib.suppress(ProcessLookupError):
                replica.process.kill()
            replica.process.wait()
        for process, _ in rig.controllers:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait()
        rig.balancer.stop()
        if rig.session is not None:
            await rig.session.close()
        if rig.api is not None:
            await rig.api.close()
        await asyncio.to_thread(rig.apiserver.stop)
        if scratch is not None:
            scratch.cleanup()


# -- the load -----------------------------------------------------------------------------------


def _is_mutated(pod: dict[str, Any]) -> bool:
    containers = pod.get("spec", {}).get("containers") or [{}]
    env = {variable.get("name") for variable in containers[0].get("env") or ()}
    return pod.get("spec", {}).get("schedulerName") == "volcano" and "TF_CONFIG" in env


def _timed_out(error: ApiError) -> bool:
    """kube-apiserver's words for a webhook that did not answer within its timeoutSeconds (or
    its own request deadline), or no answer to the client at all."""
    text = str(error)
    return error.status in (504,) or "deadline exceeded" in text or "Timeout" in error.reason


class Load:
    """Pod creations at ``rate`` per second, each counted into the step it began in."""

    def __init__(self, api: KubeApi, tfjob: dict[str, Any], options: RigOptions) -> None:
        self._api = api
        self._options = options
        self._pod = copy.deepcopy(SEED.review["request"]["object"])
        self._pod["metadata"]["ownerReferences"][0]["uid"] = tfjob["metadata"]["uid"]
        self._pod["metadata"]["ownerReferences"][0]["name"] = tfjob["metadata"]["name"]
        for key in ("uid", "resourceVersion", "creationTimestamp", "generateName"):
            self._pod["metadata"].pop(key, None)
        self._pod["metadata"]["namespace"] = LOAD_NAMESPACE
        self._pod["spec"].pop("volumes", None)
        self._pod["spec"]["containers"][0].pop("volumeMounts", None)
        self.steps: list[StepFigures] = []
        self.begun = 0
        self.in_flight = 0
        self.records: list[CreateRecord] = []
        self._tasks: set[asyncio.Task[None]] = set()

    def step(self, name: str) -> StepFigures:
        figures = StepFigures(name)
        self.steps.append(figures)
        return figures

    async def run(self, stop: asyncio.Event) -> None:
        interval = 1.0 / self._options.rate
        next_at = time.monotonic()
        while not stop.is_set():
            self.begun += 1
            task = asyncio.create_task(self._create(self.begun, self.steps[-1]))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
        if self._tasks:
            await asyncio.wait(self._tasks)

    async def _create(self, number: int, step: StepFigures) -> None:
        step.creations += 1
        self.in_flight += 1
        began = time.time()
        try:
            outcome, answered, message = await self._admit(number, step)
        finally:
            self.in_flight -= 1
        # One line per create, for the cause of anything that failed (creates.csv in the workdir).
        self.records.append(CreateRecord(number, step.name, began, answered, outcome, message))

    async def _admit(self, number: int, step: StepFigures) -> tuple[str, float, str]:
        """Create the pod (again while kube-apiserver is away), check it was mutated, delete it:
        the outcome, when kube-apiserver answered (epoch seconds), and its message if any."""
        pod = copy.deepcopy(self._pod)
        pod["metadata"]["name"] = name = f"load-{number}"
        waited = 0
        while True:
            started = time.monotonic()
            try:
                try:
                    created = await self._api.create(PODS, pod, LOAD_NAMESPACE)
                except AlreadyExists:
                    # A retry of a create whose answer was lost with kube-apiserver: it did create it.
                    created = await self._api.get(PODS, name, LOAD_NAMESPACE)
                break
            except ConnectionFailed as error:
                if "Timeout" in error.reason:
                    return self._refused(step, error, "timed out", time.monotonic() - started)
                # kube-apiserver is not there (restarting): not an admission; try again.
                waited = await self._wait_for_apiserver(step, waited)
            except ApiError as error:
                if error.status == 503 and "webhook" not in str(error):
                    # kube-apiserver shutting down for its restart: not an admission; try again.
                    waited = await self._wait_for_apiserver(step, waited)
                    continue
                outcome = "timed out" if _timed_out(error) else "failed"
                return self._refused(step, error, outcome, time.monotonic() - started)
        answered = time.time()
        step.longest_seconds = max(step.longest_seconds, time.monotonic() - started)
        step.created += 1
        mutated = _is_mutated(created)
        if not mutated:
            step.not_mutated += 1
        await self._delete(name)
        return ("created" if mutated else "not mutated"), answered, ""

    def _refused(
        self, step: StepFigures, error: ApiError, outcome: str, seconds: float
    ) -> tuple[str, float, str]:
        if outcome == "timed out":
            step.timed_out += 1
        else:
            step.failed += 1
        self._record_error(step, error)
        step.longest_seconds = max(step.longest_seconds, seconds)
        return outcome, time.time(), str(error)

    async def calm(self, within: float = 30.0) -> float:
        """Wait until at most 0.2 s of the load is under way (a backlog from an earlier step is
        through), so that each step's action meets the steady load; the seconds waited."""
        started = time.monotonic()
        limit = max(2.0, self._options.rate * 0.2)
        while self.in_flight > limit and time.monotonic() - started < within:  # noqa: ASYNC110 -- a count
            await asyncio.sleep(0.1)
        return time.monotonic() - started

    def write_records(self, path: Path) -> None:
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["number", "step", "began", "answered", "outcome", "message"])
            writer.writerows(dataclasses.astuple(record) for record in self.records)

    @staticmethod
    async def _wait_for_apiserver(step: StepFigures, waited: int) -> int:
        """Back off (0.1 s doubling to 1 s) before trying a create again; the create counts once."""
        if not waited:
            step.api_waits += 1
        await asyncio.sleep(min(1.0, 0.1 * 2**waited))
        return waited + 1

    async def _delete(self, name: str) -> None:
        for _ in range(100):
            try:
                await self._api.delete(PODS, name, LOAD_NAMESPACE, grace_period_seconds=0)
                return
            except NotFound:
                return
            except ApiError:
                await asyncio.sleep(0.5)

    @staticmethod
    def _record_error(step: StepFigures, error: ApiError) -> None:
        if len(step.errors) < 5:
            step.errors.append(f"{datetime.datetime.now(datetime.UTC):%H:%M:%S.%f} {error}")


# -- the sequence -------------------------------------------------------------------------------


async def rolling_step(rig: Rig, step: StepFigures) -> None:
    """One surge of a Deployment with maxSurge 1, maxUnavailable 0: new replica ready, oldest gone."""
    oldest = rig.replicas[0]
    _, ready = await rig.start_replica()
    down, exited = await rig.terminate_replica(oldest)
    step.notes.append(f"new replica routed after {ready:.1f} s; old one unrouted {down:.1f} s, "
                      f"exited {exited:.1f} s after SIGTERM")  # fmt: skip


async def rotation_step(rig: Rig, step: StepFigures) -> None:
    due = (await rig.make_certificate_due()).decode()

    async def renewed_and_served() -> bool:
        _, stored = await rig.secret()
        current = stored.serving.cert_pem.decode()
        if current == due:
            return False
        served = await rig.served_certificates()
        return all(_same_pem(pem, current) for pem in served)

    seconds = await _wait_for(renewed_and_served, READY_WITHIN, "the renewed certificate served")
    step.notes.append(f"renewed by a replica and served by both {seconds:.1f} s after it fell due")


def _same_pem(a: str, b: str) -> bool:
    return ssl.PEM_cert_to_DER_cert(a) == ssl.PEM_cert_to_DER_cert(b)


async def apiserver_step(rig: Rig, step: StepFigures) -> None:
    started = time.monotonic()
    await asyncio.to_thread(rig.apiserver.restart_apiserver, grace=10.0)
    step.notes.append(f"kube-apiserver away and back in {time.monotonic() - started:.1f} s")


async def kill_step(rig: Rig, step: StepFigures) -> None:
    victim = rig.replicas[0]
    # The instant, to tell in creates.csv the reviews that were in flight on it from any other.
    killed_at = datetime.datetime.now(datetime.UTC)
    step.struck_at = killed_at.timestamp()
    down = await rig.kill_replica(victim)
    _, ready = await rig.start_replica()
    step.notes.append(
        f"SIGKILL at {killed_at:%H:%M:%S.%f}; unrouted after {down:.1f} s; "
        f"its replacement routed {ready:.1f} s later"
    )


async def leader_step(rig: Rig, step: StepFigures) -> None:
    process, _ = await rig.leader()
    process.send_signal(signal.SIGTERM)

    async def other_leads() -> bool:
        others = [port for p, port in rig.controllers if p is not process and p.poll() is None]
        return any([await rig.is_leader(port) for port in others])

    seconds = await _wait_for(other_leads, READY_WITHIN, "the standby leading")
    # It exits; supervise_controllers starts a new one, as its Deployment would.
    await asyncio.to_thread(process.wait, 30)
    step.notes.append(f"the standby led {seconds:.1f} s after the leader's SIGTERM")


Action = Callable[[Rig, StepFigures], Awaitable[None]]


async def _nothing(rig: Rig, step: StepFigures) -> None:
    return None


STEPS: tuple[tuple[str, Action], ...] = (
    ("steady", _nothing),
    ("rolling upgrade 1/2", rolling_step),
    ("rolling upgrade 2/2", rolling_step),
    ("certificate rotation", rotation_step),
    ("kube-apiserver restart", apiserver_step),
    ("replica kill -9", kill_step),
    ("leader handover", leader_step),
)


async def run_sequence(rig: Rig, steps: tuple[tuple[str, Action], ...] = STEPS) -> RunFigures:
    assert rig.api is not None
    tfjob = copy.deepcopy(SEED.tfjobs[0])
    for key in ("uid", "resourceVersion", "generation", "creationTimestamp"):
        tfjob["metadata"].pop(key, None)
    tfjob["metadata"]["namespace"] = LOAD_NAMESPACE
    tfjob = await rig.api.create(TFJOBS, tfjob, LOAD_NAMESPACE)
    load = Load(rig.api, tfjob, rig.options)
    stop = asyncio.Event()
    started = time.monotonic()
    load.step(steps[0][0])
    running = asyncio.create_task(load.run(stop))
    try:
        for index, (name, action) in enumerate(steps):
            step = load.steps[-1] if index == 0 else load.step(name)
            began = time.monotonic()
            restarts = rig.controller_restarts
            waited = await load.calm()
            if waited > 1.0:
                step.notes.append(f"began once the load was steady again ({waited:.1f} s)")
            await action(rig, step)
            await asyncio.sleep(rig.options.settle)
            step.seconds = time.monotonic() - began
            if rig.controller_restarts > restarts:
                exited = rig.controller_restarts - restarts
                step.notes.append(f"{exited} controller(s) exited and were started again")
            logger.info("step %s done: %s", name, step)
        final = load.step("steady to the end")
        began = time.monotonic()
        while load.begun < rig.options.min_creations:  # noqa: ASYNC110 -- a count, not an event
            await asyncio.sleep(0.2)
        final.seconds = time.monotonic() - began
    finally:
        stop.set()
        await running
        load.write_records(rig.workdir / "creates.csv")
    return RunFigures(load.steps, time.monotonic() - started, str(rig.workdir), load.records)
