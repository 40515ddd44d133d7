"""A small cluster for integration tests: the sandbox API server, the node agent and the scheduler.

Everything talks over real HTTP through ``kube.api.KubeApi``, and
``kubectl`` runs as a real subprocess against the same kubeconfig.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kube.api import KubeApi
from kube.client import make_api_client
from kube.events import EventRecorder
from kube.resources import PODS, Resource
from sandbox.kubelet.agent import AgentOptions, NodeAgent
from sandbox.kubelet.backoff import BackoffPolicy
from sandbox.kubelet.nodespec import parse_nodes
from sandbox.scheduler.runner import Scheduler, SchedulerOptions
from sandbox.testing import ApiServerHandle, start_apiserver
from tests.polling import eventually as eventually


def kubectl_binary() -> str:
    found = shutil.which("kubectl") or str(Path(sys.executable).with_name("kubectl"))
    return found


def status_column(pod: dict[str, Any]) -> str:
    """The STATUS column of ``kubectl get pods`` (kubectl's printer rules, one container per pod)."""
    status = pod.get("status") or {}
    reason = str(status.get("reason") or status.get("phase") or "")
    inits = status.get("initContainerStatuses") or []
    for index, container in enumerate(inits):
        state = container.get("state") or {}
        terminated = state.get("terminated") or {}
        waiting = state.get("waiting") or {}
        if terminated and terminated.get("exitCode") == 0:
            continue
        if terminated:
            return f"Init:{terminated.get('reason') or 'Error'}"
        if waiting.get("reason") and waiting["reason"] != "PodInitializing":
            return f"Init:{waiting['reason']}"
        return f"Init:{index}/{len(inits)}"
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated", {}).get("reason"):
            reason = state["terminated"]["reason"]
        elif state.get("running") and container.get("ready"):
            reason = "Running"
    if (pod.get("metadata") or {}).get("deletionTimestamp") and status.get("phase") not in (
        "Succeeded",
        "Failed",
    ):
        reason = "Terminating"
    return reason


def restarts(pod: dict[str, Any]) -> int:
    return sum(
        int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("containerStatuses") or []
    )


@dataclass
class History:
    """Every version of every object of one type seen on a watch, in order, by name."""

    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)

    def distinct(self, name: str, view: Callable[[dict[str, Any]], Any]) -> list[Any]:
        values: list[Any] = []
        for obj in self.objects.get(name, []):
            value = view(obj)
            if not values or values[-1] != value:
                values.append(value)
        return values


@dataclass
class Cluster:
    handle: ApiServerHandle
    api: KubeApi
    agent: NodeAgent | None
    scheduler: Scheduler | None
    agent_task: asyncio.Task[None] | None = None

    async def restart_agent(self) -> None:
        """Stop the node agent (its containers die with it) and start a fresh one on the same nodes."""
        assert self.agent is not None and self.agent_task is not None
        self.agent_task.cancel()
        await asyncio.gather(self.agent_task, return_exceptions=True)
        self.agent = NodeAgent(self.api, self.agent.options)
        self.agent_task = asyncio.create_task(self.agent.run())
        await asyncio.wait_for(self.agent.ready.wait(), 15)

    async def kubectl(self, *args: str) -> tuple[int, str]:
        process = await asyncio.create_subprocess_exec(
            kubectl_binary(),
            "--kubeconfig",
            self.handle.kubeconfig,
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        output, errors = await process.communicate()
        code = process.returncode or 0
        # kubectl's notices (e.g. "Defaulted container") go to stderr; keep them out unless it failed.
        return code, output.decode() + (errors.decode() if code else "")

    @contextlib.asynccontextmanager
    async def watching(self, res: Resource, namespace: str = "default") -> AsyncIterator[History]:
        history = History()
        _, version = await self.api.list_all(res, namespace)

        async def follow() -> None:
            async for event in self.api.watch(res, namespace, resource_version=version, timeout_seconds=120):
                name = str(event.object.get("metadata", {}).get("name", ""))
                if event.type == "DELETED":
                    history.deleted.add(name)
                if event.type in ("ADDED", "MODIFIED", "DELETED"):
                    history.objects.setdefault(name, []).append(event.object)

        task = asyncio.create_task(follow())
        try:
            yield history
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def get_pod(api: KubeApi, name: str) -> dict[str, Any]:
    return await api.get(PODS, name, "default")


def pod_manifest(name: str, script: str, *, restart_policy: str = "Always", **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox", "command": ["sh", "-c", script]}
    container.update(spec.pop("container", {}))
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"restartPolicy": restart_policy, "containers": [container], **spec},
    }
    return body


@contextlib.asynccontextmanager
async def sandbox_cluster(
    nodes: str = "las1",
    *,
    backoff_base: float = 0.3,
    kubelet: bool = True,
    scheduler: bool = True,
    volcano_crds: bool = True,
) -> AsyncIterator[Cluster]:
    with (
        start_apiserver(install_volcano_crds=volcano_crds) as handle,
        tempfile.TemporaryDirectory(prefix="tfgang-kubelet-test-") as state,
    ):
        api = KubeApi(await make_api_client(handle.kubeconfig))
        recorder = EventRecorder(api, "volcano")
        plain_recorder = EventRecorder(api, "default-scheduler")
        agent = (
            NodeAgent(
                api,
                AgentOptions(
                    tuple(parse_nodes(nodes)),
                    Path(state),
                    BackoffPolicy.scaled(backoff_base),
                    start_delay=0.05,
                    sync_delay=0.05,
                ),
            )
            if kubelet
            else None
        )
        gang = (
            Scheduler(
                api,
                recorder,
                SchedulerOptions(period=0.5, min_interval=0.05, volcano_sync_grace=0.5),
                plain_recorder=plain_recorder,
            )
            if scheduler
            else None
        )
        cluster = Cluster(handle, api, agent, gang)
        scheduler_task = None
        if agent is not None:
            cluster.agent_task = asyncio.create_task(agent.run())
            await asyncio.wait_for(agent.ready.wait(), 15)
        if gang is not None:
            scheduler_task = asyncio.create_task(gang.run())
            await eventually(_sessions_started(gang), what="the first scheduling session")
        try:
            yield cluster
        finally:
            tasks = [task for task in (cluster.agent_task, scheduler_task) if task is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await recorder.close(drain_seconds=1)
            await plain_recorder.close(drain_seconds=1)
            await api.close()


def _sessions_started(gang: Scheduler) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return gang.sessions > 0

    return check
