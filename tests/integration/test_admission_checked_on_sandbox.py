"""Admission checked on every pod: a pod the mutating webhook did not run on is deleted at once, the
job says why (a Warning event and its Created condition's reason, on ``kubectl describe tfjob``),
and once the webhook runs again the job's pods are made with TF_CONFIG, no restart charged.

Two ways the webhook does not run: its configuration is gone, and the job's namespace is outside
its namespaceSelector. A reflector records every version of every pod in the test's namespace, so
the test sees each unmutated pod, however briefly it existed: none was ever bound to a node, and
each was deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from kube.errors import NotFound
from kube.patches import PatchType
from kube.reflector import Reflector
from kube.resources import MUTATING_WEBHOOK_CONFIGURATIONS, NAMESPACES, PODS
from kube.store import Store
from tests.kubectl_tfjob.plugin import kubectl_binary
from tfjob.constants import ANNOTATION_GROUP_NAME, REASON_ADMISSION_WEBHOOK_MISSING, REASON_CREATED

from .cluster import Cluster, condition, eventually, simple_job
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


def _mutated(pod: dict[str, Any]) -> bool:
    return ANNOTATION_GROUP_NAME in ((pod.get("metadata") or {}).get("annotations") or {})


def _tf_config(pod: dict[str, Any]) -> str | None:
    for container in pod["spec"]["containers"]:
        if container["name"] == "tensorflow":
            for entry in container.get("env") or ():
                if entry["name"] == "TF_CONFIG":
                    return str(entry.get("value"))
    return None


def assert_no_unmutated_pod_ran(seen: list[tuple[str, dict[str, Any]]]) -> int:
    """Each pod that was ever seen without the webhook's marks was never bound and was deleted;
    the number of such pods."""
    unmutated = {pod["metadata"]["uid"]: pod for _, pod in seen if not _mutated(pod)}
    deleted = {pod["metadata"]["uid"] for kind, pod in seen if kind == "DELETED"}
    for uid, pod in unmutated.items():
        versions = [p for _, p in seen if p["metadata"]["uid"] == uid]
        assert not any((p.get("spec") or {}).get("nodeName") for p in versions), pod["metadata"]["name"]
        assert all((p.get("status") or {}).get("phase") in (None, "Pending") for p in versions)
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
    return len(live) == count and all(_mutated(pod) and _tf_config(pod) for pod in live)


async def _refuse_then_heal(
    cluster: Cluster,
    apiserver: Any,
    controller_kubeconfig: str,
    name: str,
    restore: Callable[[], Awaitable[None]],
) -> None:
    """With admission already broken: the job is refused and says why; ``restore`` heals it."""
    ns = cluster.namespace
    async with (
        recorded_pods(cluster) as seen,
        running_controller(controller_kubeconfig, controller_config(namespace=ns)),
    ):
        await cluster.create_job(simple_job(name, ns, workers=2))
        await eventually(lambda: cluster.podgroup(name), what=f"PodGroup {name}")
        await cluster.set_podgroup_phase(name, "Inqueue")

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
        # Retried with back-off, never left running: whatever was made is gone again.
        await asyncio.sleep(1.0)
        assert [
            p for p in (await cluster.pods(name)).values() if not p["metadata"].get("deletionTimestamp")
        ] == []

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
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
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
        await _refuse_then_heal(cluster, apiserver, controller_kubeconfig, "nowebhook", restore)
    finally:
        if not restored:
            with contextlib.suppress(Exception):
                await cluster.api.create(MUTATING_WEBHOOK_CONFIGURATIONS, body)


async def test_in_a_namespace_outside_the_webhooks_selector_no_pod_runs_and_joining_it_heals_the_job(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
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
        await _refuse_then_heal(cluster, apiserver, controller_kubeconfig, "skipped", join)
    finally:
        with contextlib.suppress(NotFound):
            await set_selector({})
