"""The chaos scenarios, each a function from a running cluster to its figures.

The tests in this folder assert on the figures; ``bench/chaos.py`` runs the scenarios N times and
prints them for ``docs/reliability.md``. A scenario works on a ``ChaosCluster``; ``SandboxCluster``
is a ``LocalCluster`` (``sandbox.cluster``: the sandbox API server in this process, the scheduler,
node agent, webhook and controller as processes). Each scenario takes a namespace of its own,
and watches it from the start with a ``Census``: every uid ever created per object name (a name
with two uids is a duplicate) and every job that was ever Failed. Jobs are small TFJobs whose pods
the node agent really runs (``sleep``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import ssl
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import aiohttp

from certs.authority import new_ca
from certs.files import write_cert_dir
from certs.serving import issue_serving_certificate, service_dns_names
from controller.resources import TFJOBS
from kube.api import KubeApi
from kube.client import make_api_client
from kube.errors import ApiError
from kube.reflector import Reflector
from kube.resources import LEASES, NAMESPACES, PODGROUPS_V1BETA1, PODS, SERVICES, Resource
from kube.store import Store
from sandbox.cluster import ClusterOptions, LocalCluster
from sandbox.webhook_configs import OPERATOR_NAMESPACE, ca_bundle_of, webhook_configurations
from tests.integration.cluster import JOB_RESOURCES, WRITE_VERBS, simple_job
from tests.polling import eventually

CHAOS_NODES = "las1:cpu=64,memory=256Gi"
LEASE_NAME = "tfgang-chaos"
LEASE_SECONDS = 4.0
LEADER_FLAGS = (
    "--leader-elect", "--lease-namespace", "default", "--lease-name", LEASE_NAME,
    "--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5",
)  # fmt: skip
CHILDREN: tuple[Resource, ...] = (PODS, SERVICES, PODGROUPS_V1BETA1)


class ChaosCluster(Protocol):
    """What a scenario needs of the cluster under test. ``SandboxCluster`` is the sandbox's; a
    kube-apiserver fixture can offer the same (an outage there is a restart on the same etcd)."""

    kubeconfig: Path
    webhook_port: int
    webhook_cert_dir: Path

    async def kill(self, name: str) -> None: ...
    async def restart(self, name: str) -> None: ...
    async def start_controller(self, name: str) -> None: ...
    async def is_leader(self, name: str) -> bool: ...
    async def api_outage(self, seconds: float) -> None: ...
    def expire_watches(self) -> None: ...
    def check(self) -> None: ...
    def writers(self, namespace: str) -> list[str]: ...
    async def trust(self, ca_pem: bytes) -> None: ...


class SandboxCluster:
    """A ``LocalCluster`` as the scenarios drive it."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.local = cluster
        self.kubeconfig = cluster.kubeconfig
        self.webhook_port = cluster.webhook_port
        self.webhook_cert_dir = cluster.workdir / "webhook-certs"

    async def kill(self, name: str) -> None:
        await self.local.supervisor.kill(name)

    async def restart(self, name: str) -> None:
        await self.local.restart(name)

    async def start_controller(self, name: str) -> None:
        if name not in self.local.ops_ports:
            await self.local.start_controller(name)

    async def is_leader(self, name: str) -> bool:
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session,
                session.get(f"http://127.0.0.1:{self.local.ops_ports[name]}/metrics") as response,
            ):
                text = await response.text()
        except (aiohttp.ClientError, OSError, TimeoutError):
            return False
        return "tfgang_controller_is_leader 1.0" in text.splitlines()

    async def api_outage(self, seconds: float) -> None:
        await self.local.sandbox_server.outage(seconds)

    def expire_watches(self) -> None:
        self.local.sandbox_server.act(0.0, drop_watches=True, compact=True)

    def check(self) -> None:
        self.local.check()

    def writers(self, namespace: str) -> list[str]:
        """Who wrote to the namespace's job objects (pods, services, PodGroups, TFJobs), in order."""
        return [
            record.user
            for record in self.local.sandbox_server.state.request_log.records()
            if record.namespace == namespace
            and record.verb in WRITE_VERBS
            and record.resource in JOB_RESOURCES
            and 200 <= record.code < 300
        ]

    async def trust(self, ca_pem: bytes) -> None:
        url = f"https://127.0.0.1:{self.webhook_port}"
        for configuration in webhook_configurations(url, ca_bundle_of(ca_pem)):
            await self.local.server.apply_object(configuration)


@dataclass(frozen=True)
class Figures:
    scenario: str
    jobs: int
    succeeded: int
    ever_failed: int
    duplicates: int
    seconds: float
    kills: int = 0
    takeover_seconds: float | None = None
    """Leader failover: from the leader's SIGKILL to the standby leading."""
    recovery_seconds: float | None = None
    """Webhook outage: from the webhook's return to the job's first pod."""
    requests: int = 0
    failed_requests: int = 0
    errors: tuple[str, ...] = ()
    """A few distinct failures or the objects made twice, to say what went wrong."""

    @property
    def lost(self) -> int:
        return self.jobs - self.succeeded


def cluster_options(**overrides: Any) -> ClusterOptions:
    """The chaos cluster: one roomy node, the operator, a short crash-loop back-off."""
    settings: dict[str, Any] = {
        "nodes": CHAOS_NODES,
        "operator": True,
        "backoff_base": 1.0,
        "startup_timeout": 120.0,
        **overrides,
    }
    return ClusterOptions(**settings)


def chaos_job(name: str, namespace: str, seconds: float, workers: int = 2) -> dict[str, Any]:
    """A TFJob whose workers sleep ``seconds`` and succeed."""
    job = simple_job(name, namespace, workers=workers, restart_policy="OnFailure")
    template = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    template["command"] = ["sh", "-c", f"sleep {seconds:.1f}"]
    template["resources"] = {"limits": {"cpu": "10m", "memory": "10Mi"}}
    return job


def _last_state(job: dict[str, Any]) -> str:
    conditions = (job.get("status") or {}).get("conditions") or []
    return str(conditions[-1].get("type", "")) if conditions else ""


class Census:
    """What a namespace ever held, watched from the start: uids per object name, jobs ever Failed."""

    def __init__(self, api: KubeApi, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.uids: dict[tuple[str, str], set[str]] = {}
        self.ever_failed: set[str] = set()
        self.states: dict[str, str] = {}
        self._reflectors = [
            Reflector(api, res, Store(), namespace=namespace, handlers=[self._child(res)], backoff_max=1.0)
            for res in CHILDREN
        ]
        self._reflectors.append(
            Reflector(api, TFJOBS, Store(), namespace=namespace, handlers=[self._on_job], backoff_max=1.0)
        )

    def _child(self, res: Resource) -> Callable[[str, dict[str, Any], dict[str, Any] | None], None]:
        def seen(_type: str, obj: dict[str, Any], _old: dict[str, Any] | None) -> None:
            meta = obj.get("metadata") or {}
            self.uids.setdefault((res.plural, str(meta.get("name"))), set()).add(str(meta.get("uid")))

        return seen

    def _on_job(self, event_type: str, job: dict[str, Any], _old: dict[str, Any] | None) -> None:
        name = str((job.get("metadata") or {}).get("name"))
        if event_type == "DELETED":
            return
        conditions = (job.get("status") or {}).get("conditions") or ()
        if any(c.get("type") == "Failed" and c.get("status") == "True" for c in conditions):
            self.ever_failed.add(name)
        self.states[name] = _last_state(job)

    @property
    def pods_seen(self) -> int:
        return sum(1 for plural, _ in self.uids if plural == PODS.plural)

    @property
    def duplicates(self) -> int:
        return sum(len(uids) - 1 for uids in self.uids.values())

    @property
    def duplicated(self) -> tuple[str, ...]:
        twice = (f"{plural}/{name}" for (plural, name), uids in self.uids.items() if len(uids) > 1)
        return tuple(sorted(twice))

    def succeeded(self, names: list[str]) -> int:
        return sum(self.states.get(name) == "Succeeded" for name in names)

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[Census]:
        tasks = [asyncio.create_task(reflector.run()) for reflector in self._reflectors]
        try:
            for reflector in self._reflectors:
                await reflector.wait_synced()
            yield self
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


@contextlib.asynccontextmanager
async def admin(cluster: ChaosCluster) -> AsyncIterator[tuple[KubeApi, str]]:
    """An admin client and a fresh namespace."""
    api = KubeApi(await make_api_client(str(cluster.kubeconfig)), qps=500.0, burst=500)
    namespace = f"chaos-{uuid.uuid4().hex[:6]}"
    try:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        await api.create(NAMESPACES, body)
        yield api, namespace
    finally:
        await api.close()


async def _create_jobs(
    api: KubeApi, namespace: str, prefix: str, count: int, rng: random.Random, seconds: tuple[float, float]
) -> list[str]:
    """``count`` chaos jobs at once, each sleeping a random time within ``seconds``; their names."""
    names = [f"{prefix}-{index:02d}" for index in range(count)]
    jobs = [chaos_job(name, namespace, rng.uniform(*seconds)) for name in names]
    await asyncio.gather(*(api.create(TFJOBS, job, namespace) for job in jobs))
    return names


def _figures(scenario: str, census: Census, names: list[str], started: float, **extra: Any) -> Figures:
    return Figures(
        scenario,
        len(names),
        census.succeeded(names),
        len(census.ever_failed),
        census.duplicates,
        time.monotonic() - started,
        **{"errors": census.duplicated, **extra},
    )


# -- controller kill -9 at random moments ---------------------------------------------------------


async def kill_storm(cluster: ChaosCluster, rng: random.Random, jobs: int = 20, kills: int = 6) -> Figures:
    """``jobs`` lifecycles at once while the controller is killed with SIGKILL ``kills`` times at
    random moments and restarted at once, as its Deployment would."""
    started = time.monotonic()
    async with admin(cluster) as (api, ns), Census(api, ns).watching() as census:
        names = await _create_jobs(api, ns, "storm", jobs, rng, (2, 10))
        done = 0
        while done < kills:
            await asyncio.sleep(rng.uniform(0.3, 2.5))
            await cluster.kill("controller")
            done += 1
            await cluster.restart("controller")
        await eventually(lambda: census.succeeded(names) == jobs, 180, "every job to succeed")
        return _figures("controller kill -9", census, names, started, kills=done)


# -- API outage and a 410 storm ----------------------------------------------------------------------


async def api_outage(
    cluster: ChaosCluster, rng: random.Random, jobs: int = 8, outage: float = 6.0, storms: int = 3
) -> Figures:
    """Mid-job, the API server goes away for ``outage`` seconds, then every watch is dropped with
    its history compacted ``storms`` times: every component relists, every job finishes."""
    started = time.monotonic()
    async with admin(cluster) as (api, ns), Census(api, ns).watching() as census:
        names = await _create_jobs(api, ns, "outage", jobs, rng, (3, 8))
        await eventually(lambda: any(census.states.get(n) == "Running" for n in names), 60, "a running job")
        await cluster.api_outage(outage)
        for _ in range(storms):
            await asyncio.sleep(rng.uniform(0.5, 1.5))
            cluster.expire_watches()
        await eventually(lambda: census.succeeded(names) == jobs, 180, "every job to succeed")
        cluster.check()  # every process rode it out
        return _figures("API outage + 410 storm", census, names, started, kills=0)


# -- the webhook away under failurePolicy Fail -------------------------------------------------------


async def webhook_outage(cluster: ChaosCluster, rng: random.Random, away: float = 6.0) -> Figures:
    """The webhook dies right after a job is created: its pods cannot be admitted
    (``failurePolicy: Fail``), so the job waits, is not Failed, and runs once the webhook is back."""
    started = time.monotonic()
    async with admin(cluster) as (api, ns), Census(api, ns).watching() as census:
        names = ["patient"]
        await api.create(TFJOBS, chaos_job("patient", ns, rng.uniform(1, 3)), ns)
        await cluster.kill("webhook")
        await asyncio.sleep(away)
        pods, _ = await api.list_all(PODS, ns)
        assert not pods, "no pod can be admitted without the webhook"
        assert census.states.get("patient") in ("Created", ""), census.states
        back = time.monotonic()
        await cluster.restart("webhook")
        await eventually(lambda: census.pods_seen > 0, 60, "the job's pods once the webhook is back")
        recovery = time.monotonic() - back
        await eventually(lambda: census.succeeded(names) == 1, 120, "the job to succeed")
        scenario = "webhook outage (failurePolicy Fail)"
        return _figures(scenario, census, names, started, recovery_seconds=recovery)


# -- leader failover -----------------------------------------------------------------------------


async def leader_failover(cluster: ChaosCluster, rng: random.Random, jobs: int = 6) -> Figures:
    """Two controllers share a Lease; the leader is killed with SIGKILL mid-run. The standby takes
    over within about the lease duration, and at no moment do both write to the jobs' objects."""
    started = time.monotonic()
    await cluster.start_controller("controller-b")
    async with admin(cluster) as (api, ns), Census(api, ns).watching() as census:
        names = await _create_jobs(api, ns, "failover", jobs, rng, (3, 8))
        await eventually(lambda: any(census.states.get(n) == "Running" for n in names), 60, "a running job")
        lease = await api.get(LEASES, LEASE_NAME, "default")
        holder = lease["spec"]["holderIdentity"]
        leader = "controller" if await cluster.is_leader("controller") else "controller-b"
        standby = "controller-b" if leader == "controller" else "controller"
        killed = time.monotonic()
        await cluster.kill(leader)
        await eventually(lambda: cluster.is_leader(standby), 60, f"{standby} to lead")
        takeover = time.monotonic() - killed
        lease = await api.get(LEASES, LEASE_NAME, "default")
        assert lease["spec"]["holderIdentity"] != holder
        await eventually(lambda: census.succeeded(names) == jobs, 180, "every job to succeed")
        await cluster.restart(leader)  # back as the standby, for the next run
        figures = _figures("leader failover", census, names, started, kills=1, takeover_seconds=takeover)
    overlap = _writers_overlap(cluster, ns)
    assert overlap == 0, f"{overlap} writes by the old leader after the new one started writing"
    return figures


def _writers_overlap(cluster: ChaosCluster, namespace: str) -> int:
    """Writes to the namespace's job objects by a controller after another one started writing."""
    seen: list[str] = []
    overlap = 0
    for user in cluster.writers(namespace):
        if "tfgang-controller" not in user:
            continue
        if seen and seen[-1] != user and user in seen:
            overlap += 1
        elif not seen or seen[-1] != user:
            seen.append(user)
    return overlap


# -- certificate rotation while reviews flow -------------------------------------------------------


async def certificate_rotation(
    cluster: ChaosCluster, rng: random.Random, rotations: int = 3, clients: int = 3
) -> Figures:
    """New CA and serving certificate, three times, while TFJob creates (validated) flow: first the
    caBundle trusts both CAs, then the webhook's files change, then the old CA is dropped."""
    started = time.monotonic()
    cert_dir = cluster.webhook_cert_dir
    results: list[bool] = []
    errors: list[str] = []
    stop = asyncio.Event()
    async with admin(cluster) as (api, ns):

        async def review_flow(client: int) -> None:
            index = 0
            while not stop.is_set():
                job = chaos_job(f"rot-{client}-{index}", ns, 1)
                try:
                    await api.create(TFJOBS, job, ns, dry_run=True)
                    results.append(True)
                except ApiError as error:
                    results.append(False)
                    errors.append(str(error))
                index += 1

        flows = [asyncio.create_task(review_flow(client)) for client in range(clients)]
        try:
            old_pem = (cert_dir / "ca.crt").read_bytes()
            for _ in range(rotations):
                await asyncio.sleep(rng.uniform(0.3, 1.0))
                authority = new_ca("tfgang-webhook-ca")
                names = service_dns_names("tfgang-webhook", OPERATOR_NAMESPACE)
                serving = issue_serving_certificate(authority, names, ip_addresses=["127.0.0.1"])
                await cluster.trust(old_pem + serving.ca_pem)
                await asyncio.to_thread(write_cert_dir, cert_dir, serving)
                # The webhook polls its files; the old CA goes once the new certificate is served.
                served = functools.partial(_serves, cluster.webhook_port, serving.cert_pem)
                await eventually(served, 60, "the new certificate")
                await cluster.trust(serving.ca_pem)
                old_pem = serving.ca_pem
            await asyncio.sleep(0.5)
        finally:
            stop.set()
            await asyncio.gather(*flows)
    return Figures(
        "certificate rotation",
        0,
        0,
        0,
        0,
        time.monotonic() - started,
        requests=len(results),
        failed_requests=results.count(False),
        errors=tuple(sorted(set(errors)))[:5],
    )


async def _serves(port: int, cert_pem: bytes) -> bool:
    """Whether the server on ``port`` presents ``cert_pem`` to a new connection."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
    return bool(der == ssl.PEM_cert_to_DER_cert(cert_pem.decode()))


Scenario = Callable[[ChaosCluster, random.Random], Awaitable[Figures]]
