"""The node agent's I/O: register Nodes, keep them Ready, and run a worker per pod bound to them.

An ordinary API client: Nodes are created (or adopted) and their status patched through
``nodes/status``; pods are watched cluster-wide and filtered by ``spec.nodeName``; each pod's
life is a ``PodWorker``. A plain-HTTP log endpoint serves ``kubectl logs`` via the API server.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kube.api import KubeApi
from kube.errors import AlreadyExists, NotFound
from kube.events import EventRecorder
from kube.patches import PatchType
from kube.reflector import Reflector
from kube.resources import LEASES, NODES, PODS
from kube.store import Store
from sandbox.kubelet.backoff import BackoffPolicy
from sandbox.kubelet.ipam import PodIpAllocator, PodIpExhausted
from sandbox.kubelet.logserver import LogServer
from sandbox.kubelet.logstore import LogStore
from sandbox.kubelet.nodeobject import HOST_IP, node_labels, node_object, node_status
from sandbox.kubelet.nodespec import NodeSpec
from sandbox.kubelet.podworker import NodeFacts, PodWorker, WorkerSettings
from sandbox.kubelet.writes import LatestWriter, newest, retrying

logger = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40


@dataclass(frozen=True)
class AgentOptions:
    nodes: tuple[NodeSpec, ...]
    state_dir: Path
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    heartbeat_seconds: float = 10.0
    start_delay: float = 0.2
    sync_delay: float = 1.0
    log_host: str = "127.0.0.1"
    log_port: int = 0


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class NodeAgent:
    def __init__(self, api: KubeApi, options: AgentOptions) -> None:
        self._api = api
        self._options = options
        self._nodes = {spec.name: spec for spec in options.nodes}
        self._ipam = {spec.name: PodIpAllocator(index) for index, spec in enumerate(options.nodes)}
        self._logs = LogStore(options.state_dir)
        self._log_server = LogServer(self._logs, options.log_host, options.log_port)
        self._workers: dict[str, PodWorker] = {}
        self._finished: set[str] = set()
        """UIDs whose worker is done; late watch events for them must not start a new one."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._settings = WorkerSettings(
            options.state_dir, options.backoff, options.start_delay, sync_delay=options.sync_delay
        )
        self._node_conditions: dict[str, list[dict[str, Any]]] = {}
        self._recorders = {spec.name: EventRecorder(api, "kubelet", host=spec.name) for spec in options.nodes}
        self._leases = True
        self._node_writers = {
            spec.name: LatestWriter(f"node {spec.name} status", self._send_node_status, newest)
            for spec in options.nodes
        }
        self._lease_writers = {
            spec.name: LatestWriter(f"node {spec.name} lease", self._send_lease, newest)
            for spec in options.nodes
        }
        self.ready = asyncio.Event()

    @property
    def options(self) -> AgentOptions:
        return self._options

    @property
    def log_port(self) -> int:
        return self._log_server.port

    async def run(self) -> None:
        self._options.state_dir.mkdir(parents=True, exist_ok=True)
        await self._log_server.start()
        try:
            for spec in self._options.nodes:
                await self._register(spec)
            reflector = Reflector(self._api, PODS, Store(), handlers=[self._on_pod])
            async with asyncio.TaskGroup() as group:
                group.create_task(reflector.run())
                group.create_task(self._heartbeats())
                await reflector.wait_synced()
                self.ready.set()
                logger.info("node agent ready for %s", ", ".join(self._nodes))
        finally:
            await self._stop_workers()
            for node_writer in self._node_writers.values():
                await node_writer.close()
            for lease_writer in self._lease_writers.values():
                await lease_writer.close()
            await self._log_server.stop()
            for recorder in self._recorders.values():
                await recorder.close(drain_seconds=1)

    async def _stop_workers(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- nodes ------------------------------------------------------------------------------

    async def _register(self, spec: NodeSpec) -> None:
        async def register() -> None:
            try:
                await self._api.create(NODES, node_object(spec, self.log_port, _now()))
                logger.info("registered node %s", spec.name)
            except AlreadyExists:
                await self._api.patch(
                    NODES, spec.name, {"metadata": {"labels": node_labels(spec)}}, patch_type=PatchType.MERGE
                )
                logger.info("adopted existing node %s", spec.name)

        # An agent that starts while the API server is away waits for it, as a kubelet does.
        await retrying(register, f"registering node {spec.name}")
        await self._heartbeat(spec)

    async def _heartbeat(self, spec: NodeSpec) -> None:
        """A fresh node status and Lease renewal, each written as soon as the API server takes it."""
        status = node_status(spec, self.log_port, _now(), self._node_conditions.get(spec.name, ()))
        self._node_conditions[spec.name] = status["conditions"]
        await self._node_writers[spec.name].write((spec.name, status))
        if self._leases:
            await self._lease_writers[spec.name].write((spec.name, _micro_now()))

    async def _send_node_status(self, update: tuple[str, dict[str, Any]]) -> None:
        name, status = update
        await self._api.patch(
            NODES, name, {"status": status}, patch_type=PatchType.MERGE, subresource="status"
        )

    async def _send_lease(self, renewal: tuple[str, str]) -> None:
        """Renew the node's Lease as kubelets do; skipped where kube-node-lease does not exist."""
        name, renew_time = renewal
        renewed = {
            "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": renew_time}
        }
        try:
            await self._api.patch(LEASES, name, renewed, LEASE_NAMESPACE, patch_type=PatchType.MERGE)
            return
        except NotFound:
            pass
        body = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
            **renewed,
        }
        try:
            await self._api.create(LEASES, body, LEASE_NAMESPACE)
        except NotFound:
            logger.info("no %s namespace: node heartbeats go to the node status only", LEASE_NAMESPACE)
            self._leases = False

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self._options.heartbeat_seconds)
            for spec in self._options.nodes:
                await self._heartbeat(spec)

    # -- pods -------------------------------------------------------------------------------

    def _on_pod(self, event_type: str, pod: dict[str, Any], _old: dict[str, Any] | None) -> None:
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        worker = self._workers.get(uid)
        if event_type == "DELETED":
            self._finished.discard(uid)
            if worker is not None:
                worker.removed()
            return
        if uid in self._finished:
            return
        if worker is not None:
            worker.update(pod)
            return
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node not in self._nodes or not uid:
            return
        try:
            host_network = bool((pod.get("spec") or {}).get("hostNetwork"))
            pod_ip = HOST_IP if host_network else self._ipam[node].allocate(uid)
        except PodIpExhausted as error:
            logger.error("pod %s/%s cannot start: %s", meta.get("namespace"), meta.get("name"), error)
            return
        spec = self._nodes[node]
        worker = PodWorker(
            self._api,
            pod,
            NodeFacts(node, spec.capacity),
            pod_ip,
            self._logs,
            self._settings,
            self._recorders[node],
        )
        self._workers[uid] = worker
        task = asyncio.get_running_loop().create_task(self._run_worker(worker, node), name=f"pod-{uid}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_worker(self, worker: PodWorker, node: str) -> None:
        try:
            await worker.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("pod %s/%s: worker failed", worker.namespace, worker.name)
        finally:
            self._finished.add(worker.uid)
            self._workers.pop(worker.uid, None)
            self._ipam[node].release(worker.uid)
            self._logs.forget(worker.namespace, worker.name, worker.uid)
