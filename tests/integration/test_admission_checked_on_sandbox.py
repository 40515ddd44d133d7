"""Admission checked on every pod: a pod the mutating webhook did not run on is deleted at once, the
job says why (a Warning event and its Created condition's reason, on ``kubectl describe tfjob``),
and once the webhook runs again the job's pods are made with TF_CONFIG, no restart charged.

Two ways the webhook does not run: its configuration is gone, and the job's namespace is outside
its namespaceSelector. The sandbox's scheduler and node agent run meanwhile on one node: the
scheduler binds Volcano's pods and, one at a time, the default scheduler's, which an unmutated pod
names; the node agent runs what is bound to it. A reflector records every version of every pod in
the test's namespace, so the test sees each unmutated pod, however briefly it existed: each was
deleted, and none ever ran (the scheduler may bind one in the moment before its deletion, as a
kube-scheduler could; the deletion has no grace period, so no node starts it). Once healed, the
job's pods run, with TF_CONFIG.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from kube.api import KubeApi
from kube.client import make_api_client
from kube.errors import NotFound
from kube.patches import PatchType
from kube.reflector import Reflector
from kube.resources import MUTATING_WEBHOOK_CONFIGURATIONS, NAMESPACES, PODS
from kube.store import Store
from sandbox.kubelet.agent import AgentOptions, NodeAgent
from sandbox.kubelet.nodespec import parse_nodes
from tests.kubectl_tfjob.plugin import kubectl_binary
from tfjob.constants import ANNOTATION_GROUP_NAME, REASON_ADMISSION_WEBHOOK_MISSING, REASON_CREATED

from .cluster import Cluster, condition, eventually, simple_job
from .gang import gang_scheduler, node
from .operator import WEBHOOK_NAME, controller_config, running_controller

SKIP_LABEL = "tfgang-test.kubeflow.org/admission"


@contextlib.asynccontextmanager
async def recorded_pods(cluster: Cluster) -> AsyncIterator[list[tuple[str, dict[str, Any]]]]:
    """Every (event type, pod) the namespace's pod watch delivers while the block runs."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def record(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        seen.append((event_type, obj))

    reflector = Reflector(cluster.api, PODS, Store(), namespace=cluster.namespace, handlers=[record])
    task = asyncio.create_task(reflector.run())
    try:
        await reflector.wait_synced()
        yield seen
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@contextlib.asynccontextmanager
async def scheduler_and_node_agent(apiserver: Any, state_dir: Path) -> AsyncIterator[None]:
    """The sandbox's scheduler and node agent on one fresh node, until the block ends."""
    name = f"admission-{uuid.uuid4().hex[:6]}"
    async with gang_scheduler(apiserver, [node(name)]):
        api = KubeApi(await make_api_client(str(apiserver.kubeconfig)), qps=1000.0, burst=1000)
        options = AgentOptions(nodes=tuple(parse_nodes(f"{name}:cpu=8,memory=32Gi")), state_dir=state_dir)
        agent = NodeAgent(api, options)
        task = asyncio.create_task(agent.run())
        try:
            async with asyncio.timeout(30):
                await agent.ready.wait()
            yield
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await api.close()


def _mutated(pod: dict[str, Any]) -> bool:
    return ANNOTATION_GROUP_NAME in ((pod.get("metadata") or {}).get("annotations") or {})


def _tf_config(pod: dict[str, Any]) -> str | None:
    for container in pod["spec"]["containers"]:
        if container["name"] == "tensorflow":
            for entry in container.get("env") or ():
                if entry["name"] == "TF_CONFIG":
                    return str(entry.get("value"))
    return None


def _started(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    return status.get("phase") not in (None, "Pending") or any(
        set(c.get("state") or {}) - {"waiting"} for c in containers
    )


def assert_no_unmutated_pod_ran(seen: list[tuple[str, dict[str, Any]]]) -> int:
    """Each pod that was ever seen without the webhook's marks never started and was deleted;
    the number of such pods."""
    unmutated = {pod["metadata"]["uid"]: pod for _, pod in seen if not _mutated(pod)}
    deleted = {pod["metadata"]["uid"] for kind, pod in seen if kind == "DELETED"}
    for uid, pod in unmutated.items():
        versions = [p for _, p in seen if p["metadata"]["uid"] == uid]
        assert not any(_started(p) for p in versions), (pod["metadata"]["name"], versions)
        assert _tf_config(pod) is None  # really unmutated, not merely unannotated
        assert uid in deleted, f"unmutated pod {pod['metadata']['name']} was left in place"
    return len(unmutated)


async def describe(apiserver: Any, namespace: str, name: str) -> str:
    result = await asyncio.to_thread(
        subprocess.run,
        [
            kubectl_binary(),
            "--kubeconfig",
            str(apiserver.kubeconfig),
            "-n",
            namespace,
            "describe",
            "tfjob",
            name,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout


async def _refused(cluster: Cluster, name: str) -> dict[str, Any] | None:
    created = condition(await cluster.job(name), "Created")
    if created is not None and created.get("reason") == REASON_ADMISSION_WEBHOOK_MISSING:
        return created
    return None


async def _runs_with_tf_config(cluster: Cluster, name: str, count: int) -> bool:
    pods = await cluster.pods(name)
    live = [pod for pod in pods.values() if not pod["metadata"].get("deletionTimestamp")]
    return len(live) == count and all(
        _mutated(pod) and _tf_config(pod) and (pod.get("status") or {}).get("phase") == "Running"
        for pod in live
    )


async def _refuse_then_heal(
    cluster: Cluster,
    apiserver: Any,
    controller_kubeconfig: str,
    name: str,
    restore: Callable[[], Awaitable[None]],
    state_dir: Path,
) -> None:
    """With admission already broken: the job is refused and says why; ``restore`` heals it."""
    ns = cluster.namespace
    async with (
        recorded_pods(cluster) as seen,
        scheduler_and_node_agent(apiserver, state_dir),
        running_controller(controller_kubeconfig, controller_config(namespace=ns)),
    ):
        await cluster.create_job(simple_job(name, ns, workers=2))

        created = await eventually(
            lambda: _refused(cluster, name), within=20, what="reason AdmissionWebhookMissing"
        )
        assert (
            f"namespace {ns}" in created["message"]
            and "mutating webhook did not run on pod" in created["message"]
        )
        events = [
            e for e in await cluster.events(name) if e.get("reason") == REASON_ADMISSION_WEBHOOK_MISSING
        ]
        assert events and events[0]["type"] == "Warning"
        described = await describe(apiserver, ns, name)
        assert described.count(REASON_ADMISSION_WEBHOOK_MISSING) >= 2, described  # condition and event
        await restore()
        await eventually(
            lambda: _runs_with_tf_config(cluster, name, 2), within=30, what="2 pods with TF_CONFIG"
        )
        await eventually(
            lambda: condition_reason(cluster, name), within=10, what="the Created reason back to TFJobCreated"
        )
        job = await cluster.job(name)
        assert not any((job.get("status") or {}).get("restartCounts", {}).values())
    count = assert_no_unmutated_pod_ran(seen)
    assert count >= 1


async def condition_reason(cluster: Cluster, name: str) -> bool:
    created = condition(await cluster.job(name), "Created")
    return created is not None and created.get("reason") == REASON_CREATED


async def test_without_the_mutating_webhook_configuration_no_pod_runs_and_restoring_it_heals_the_job(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str, tmp_path: Path
) -> None:
    saved = await cluster.api.get(MUTATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_NAME)
    body = {key: saved[key] for key in ("apiVersion", "kind", "webhooks")}
    body["metadata"] = {"name": WEBHOOK_NAME}
    restored = False

    async def restore() -> None:
        nonlocal restored
        await cluster.api.create(MUTATING_WEBHOOK_CONFIGURATIONS, body)
        restored = True

    await cluster.api.delete(MUTATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_NAME)
    try:
        await _refuse_then_heal(cluster, apiserver, controller_kubeconfig, "nowebhook", restore, tmp_path)
    finally:
        if not restored:
            with contextlib.suppress(Exception):
                await cluster.api.create(MUTATING_WEBHOOK_CONFIGURATIONS, body)


async def test_in_a_namespace_outside_the_webhooks_selector_no_pod_runs_and_joining_it_heals_the_job(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str, tmp_path: Path
) -> None:
    ns = cluster.namespace

    async def set_selector(selector: dict[str, Any]) -> None:
        configuration = await cluster.api.get(MUTATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_NAME)
        for webhook in configuration["webhooks"]:
            webhook["namespaceSelector"] = selector
        await cluster.api.replace(MUTATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_NAME, configuration)

    async def join() -> None:  # the namespace drops the label that keeps it out
        await cluster.api.patch(
            NAMESPACES, ns, {"metadata": {"labels": {SKIP_LABEL: None}}}, patch_type=PatchType.MERGE
        )

    await cluster.api.patch(
        NAMESPACES, ns, {"metadata": {"labels": {SKIP_LABEL: "off"}}}, patch_type=PatchType.MERGE
    )
    await set_selector({"matchExpressions": [{"key": SKIP_LABEL, "operator": "DoesNotExist"}]})
    try:
        await _refuse_then_heal(cluster, apiserver, controller_kubeconfig, "skipped", join, tmp_path)
    finally:
        with contextlib.suppress(NotFound):
            await set_selector({})
