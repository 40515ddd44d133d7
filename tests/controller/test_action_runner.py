"""Carrying out actions against the sandbox API server: idempotent creates, precise deletes."""

from __future__ import annotations

from typing import Any

import pytest

from controller.actions import ActionFailed, ActionRunner
from controller.metrics import ControllerMetrics
from kube.api import KubeApi
from kube.ownwrites import OwnWrites
from kube.resources import PODS
from kubeobjects.meta import Meta
from tfjob.planner import Observed
from tfjob.planner.actions import CreatePod, DeletePod

JOB_UID = "6b0b7c7e-0000-4000-8000-000000000001"
JOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": {"name": "runner", "namespace": "default", "uid": JOB_UID},
}


def _pod(name: str, *, finalizers: list[str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "ownerReferences": [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "name": "runner",
                "uid": JOB_UID,
                "controller": True,
                "blockOwnerDeletion": True,
            },
        ],
    }
    if finalizers:
        metadata["finalizers"] = finalizers
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "tensorflow", "image": "busybox:1.37.0-glibc"}]},
    }


def _runner(api: KubeApi) -> tuple[ActionRunner, OwnWrites, ControllerMetrics]:
    writes, metrics = OwnWrites(), ControllerMetrics()
    return ActionRunner(api, writes, metrics), writes, metrics


async def test_creating_an_existing_pod_of_ours_succeeds_without_a_second_create(api: KubeApi) -> None:
    runner, writes, metrics = _runner(api)
    observed = Observed(job=JOB)  # type: ignore[arg-type]
    first = await runner.run(observed, CreatePod(_pod("runner-worker-0")))
    assert first.changed and first.event is not None and first.event.reason == "SuccessfulCreatePod"
    again = await runner.run(observed, CreatePod(_pod("runner-worker-0")))
    assert not again.changed and again.event is None
    assert metrics.registry.get_sample_value("created_pods_total") == 1
    assert [p["metadata"]["name"] for p in writes.view_owned("pods", JOB_UID, [])] == ["runner-worker-0"]


async def test_a_delete_names_its_uid_and_a_gone_or_replaced_pod_counts_as_deleted(api: KubeApi) -> None:
    runner, writes, _ = _runner(api)
    observed = Observed(job=JOB)  # type: ignore[arg-type]
    created = await api.create(PODS, _pod("runner-worker-1"), "default")
    uid = created["metadata"]["uid"]
    # A stale uid never deletes the pod that holds the name now.
    stale = await runner.run(observed, DeletePod("runner-worker-1", "00000000-dead-4000-8000-000000000000"))
    assert not stale.changed, "the pod of that name is not the one we meant"
    assert (await api.get(PODS, "runner-worker-1", "default"))["metadata"]["uid"] == uid
    await runner.run(observed, DeletePod("runner-worker-1", uid))
    seen = writes.view("pods", "default", "runner-worker-1", created)  # the cache may lag behind
    assert seen is not None and seen["metadata"]["deletionTimestamp"], "our delete reads back at once"
    gone = await runner.run(observed, DeletePod("runner-worker-1", uid))  # NotFound: already done
    assert gone.event is not None and gone.event.reason == "SuccessfulDeletePod"


async def test_creating_over_a_terminating_pod_of_ours_fails_until_it_is_gone(api: KubeApi) -> None:
    runner, _, _ = _runner(api)
    observed = Observed(job=JOB)  # type: ignore[arg-type]
    await api.create(PODS, _pod("runner-worker-2", finalizers=["tfgang.test/hold"]), "default")
    await api.delete(PODS, "runner-worker-2", "default")  # held by the finalizer: terminating
    with pytest.raises(ActionFailed) as failed:
        await runner.run(observed, CreatePod(_pod("runner-worker-2")))
    assert "still terminating" in str(failed.value)
    assert failed.value.event is not None and failed.value.event.reason == "FailedCreatePod"


async def test_a_created_pod_reads_back_as_its_metadata_until_the_watch_brings_it(api: KubeApi) -> None:
    runner, writes, _ = _runner(api)
    observed = Observed(job=JOB)  # type: ignore[arg-type]
    await runner.run(observed, CreatePod(_pod("runner-worker-meta")))
    [seen] = writes.view_owned("pods", JOB_UID, [])
    # The answer was asked for as metadata alone: what the caches keep of a pod, less a status
    # that a new pod has nothing of but Pending.
    assert set(seen) == {"apiVersion", "kind", "metadata"}
    assert (seen["apiVersion"], seen["kind"]) == ("v1", "Pod")
    assert seen["metadata"]["uid"] and seen["metadata"]["resourceVersion"]
    assert Meta(seen).controller_uid == JOB_UID
    stored = await api.get(PODS, "runner-worker-meta", "default")
    assert stored["metadata"]["uid"] == seen["metadata"]["uid"] and stored["spec"]["containers"]
