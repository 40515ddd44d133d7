"""The cluster as tests drive it: an admin client that writes what a kubelet (pod status) and
Volcano (PodGroup phase) would, seed and small TFJobs, request-log counting and polling helpers.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml

from controller.resources import TFJOBS
from kube.api import KubeApi
from kube.client import make_api_client
from kube.errors import NotFound
from kube.patches import PatchType
from kube.resources import (
    EVENTS,
    PODGROUPS_V1BETA1,
    PODS,
    SERVICES,
)
from tests.polling import eventually as eventually

SEED_DIR = Path(__file__).resolve().parents[2] / "examples" / "seed"

T = TypeVar("T")


def load_seed(name: str, job_name: str, namespace: str) -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load((SEED_DIR / f"{name}.yaml").read_text())
    job["metadata"] = {"name": job_name, "namespace": namespace}
    return job


def container_status(
    state: str,
    *,
    exit_code: int = 0,
    restart_count: int = 0,
    reason: str | None = None,
    message: str | None = None,
) -> dict[str, Any]:
    """A ``tensorflow`` containerStatus in state running, terminated or waiting."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    detail: dict[str, Any]
    if state == "running":
        detail = {"running": {"startedAt": now}}
    elif state == "terminated":
        detail = {
            "terminated": {
                "exitCode": exit_code,
                "reason": reason or ("Completed" if exit_code == 0 else "Error"),
                "startedAt": now,
                "finishedAt": now,
            }
        }
    else:
        detail = {"waiting": {"reason": reason or "ContainerCreating"}}
        if message is not None:
            detail["waiting"]["message"] = message
    return {
        "name": "tensorflow",
        "image": "busybox:1.37.0-glibc",
        "imageID": "",
        "ready": state == "running",
        "restartCount": restart_count,
        "started": state == "running",
        "state": detail,
    }


class Cluster:
    """An admin client that plays the kubelet and Volcano in tests."""

    def __init__(self, api: KubeApi, namespace: str) -> None:
        self.api = api
        self.namespace = namespace

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, kubeconfig: str, namespace: str) -> AsyncIterator[Cluster]:
        client = await make_api_client(kubeconfig)
        api = KubeApi(client, qps=1000.0, burst=1000)
        try:
            yield cls(api, namespace)
        finally:
            await api.close()

    async def create_job(self, job: Mapping[str, Any]) -> dict[str, Any]:
        return await self.api.create(TFJOBS, dict(job), self.namespace)

    async def job(self, name: str) -> dict[str, Any]:
        return await self.api.get(TFJOBS, name, self.namespace)

    async def pods(self, job_name: str) -> dict[str, dict[str, Any]]:
        listed = await self.api.list(
            PODS, self.namespace, label_selector=f"training.kubeflow.org/job-name={job_name}"
        )
        return {pod["metadata"]["name"]: pod for pod in listed.get("items") or ()}

    async def services(self, job_name: str) -> dict[str, dict[str, Any]]:
        listed = await self.api.list(
            SERVICES, self.namespace, label_selector=f"training.kubeflow.org/job-name={job_name}"
        )
        return {svc["metadata"]["name"]: svc for svc in listed.get("items") or ()}

    async def podgroup(self, name: str) -> dict[str, Any] | None:
        try:
            return await self.api.get(PODGROUPS_V1BETA1, name, self.namespace)
        except NotFound:
            return None

    async def events(self, name: str) -> list[dict[str, Any]]:
        listed = await self.api.list(EVENTS, self.namespace)
        return [e for e in listed.get("items") or () if (e.get("involvedObject") or {}).get("name") == name]

    async def set_podgroup_phase(self, name: str, phase: str, running: int = 0) -> None:
        """What Volcano writes: PodGroup ``status`` (no status subresource, so on the object)."""
        await self.api.patch(
            PODGROUPS_V1BETA1,
            name,
            {"status": {"phase": phase, "running": running}},
            self.namespace,
            patch_type=PatchType.MERGE,
        )

    async def set_pod(self, name: str, phase: str, container: dict[str, Any] | None = None) -> None:
        """What a kubelet writes: pod phase and the tensorflow container's status."""
        status: dict[str, Any] = {"phase": phase}
        if container is not None:
            status["containerStatuses"] = [container]
        if phase == "Running":
            status["podIP"] = "10.0.0.1"
        await self.api.patch(
            PODS, name, {"status": status}, self.namespace, patch_type=PatchType.MERGE, subresource="status"
        )

    async def run_pods(self, names: list[str], restart_count: int = 0) -> None:
        for name in names:
            await self.set_pod(name, "Running", container_status("running", restart_count=restart_count))

    async def finish_pods(self, names: list[str], exit_code: int = 0) -> None:
        phase = "Succeeded" if exit_code == 0 else "Failed"
        for name in names:
            await self.set_pod(name, phase, container_status("terminated", exit_code=exit_code))

    @contextlib.asynccontextmanager
    async def reaping_terminating_pods(self) -> AsyncIterator[None]:
        """Play the kubelet's last step: remove pods whose deletion was requested."""

        async def reap() -> None:
            while True:
                listed = await self.api.list(PODS, self.namespace)
                for pod in listed.get("items") or ():
                    if pod["metadata"].get("deletionTimestamp"):
                        await self.force_delete_pod(pod["metadata"]["name"])
                await asyncio.sleep(0.05)

        task = asyncio.create_task(reap())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def force_delete_pod(self, name: str) -> None:
        """What a kubelet does once a terminating pod's containers stopped: remove it for good."""
        with contextlib.suppress(NotFound):
            await self.api.delete(PODS, name, self.namespace, grace_period_seconds=0)


def last_state(job: Mapping[str, Any]) -> str:
    """The ``STATE`` column of ``kubectl get tfjob``: the type of the last condition."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return str(conditions[-1].get("type", "")) if conditions else ""


def condition(job: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    for entry in (job.get("status") or {}).get("conditions") or ():
        if entry.get("type") == type_:
            return dict(entry)
    return None


WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
JOB_RESOURCES = frozenset({"pods", "services", "podgroups", "tfjobs"})


async def expire_watches(apiserver: Any) -> None:
    """End every open watch so that every watcher comes back with a resourceVersion that is now
    too old and gets 410 Gone (the sandbox compacts its history; kube-apiserver is restarted).
    On a thread, so that this loop's clients see their connections close meanwhile."""
    await asyncio.to_thread(apiserver.expire_watches)


def controller_writes(apiserver: Any, user: str, namespace: str) -> list[Any]:
    """The successful writes ``user`` made to a job's resources in ``namespace``, in order."""
    return [
        record
        for record in apiserver.request_log()
        if record.user == user
        and record.namespace == namespace
        and record.verb in WRITE_VERBS
        and record.resource in JOB_RESOURCES
        and 200 <= record.code < 300
    ]


def status_writes(records: list[Any]) -> list[Any]:
    return [r for r in records if r.resource == "tfjobs" and r.subresource == "status"]


def simple_job(
    name: str,
    namespace: str,
    *,
    workers: int = 1,
    ps: int = 0,
    restart_policy: str = "Never",
    run_policy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A small TFJob whose pods nobody runs: tests write their statuses."""

    def replica(count: int) -> dict[str, Any]:
        return {
            "replicas": count,
            "restartPolicy": restart_policy,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "tensorflow",
                            "image": "busybox:1.37.0-glibc",
                            "command": ["sh", "-c", "sleep 30"],
                            "resources": {"limits": {"cpu": "100m", "memory": "10Mi"}},
                        }
                    ]
                }
            },
        }

    specs = {"Worker": replica(workers)}
    if ps:
        specs["PS"] = replica(ps)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"runPolicy": dict(run_policy or {}), "tfReplicaSpecs": specs},
    }


async def admit_and_wait_for_pods(
    cluster: Cluster, job_name: str, count: int, within: float = 10.0
) -> list[str]:
    """Play Volcano (PodGroup -> Inqueue) and wait for the job's ``count`` pods; their names."""
    await eventually(lambda: cluster.podgroup(job_name), within, what=f"PodGroup {job_name}")
    await cluster.set_podgroup_phase(job_name, "Inqueue")

    async def all_pods() -> list[str] | None:
        pods = await cluster.pods(job_name)
        return sorted(pods) if len(pods) == count else None

    return await eventually(all_pods, within, what=f"{count} pods of {job_name}")


async def wait_for_state(cluster: Cluster, job_name: str, state: str, within: float = 10.0) -> dict[str, Any]:
    async def reached() -> dict[str, Any] | None:
        job = await cluster.job(job_name)
        return job if last_state(job) == state else None

    return await eventually(reached, within, what=f"{job_name} in state {state}")
