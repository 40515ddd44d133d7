"""What the controller reads from a pod create's answer to know the mutating webhook ran, for each
gang mode, on a sandbox API server with no webhook registered (so no pod is ever mutated).

- Volcano: the group-name annotation; scheduler-plugins: the pod-group label (both metadata);
- gang scheduling off: the webhook adds only TF_CONFIG, to distributed jobs, so the whole pod is
  asked back and its env read; a one-replica job gets nothing from the webhook and is not checked.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controller.admission import mutation_check
from controller.config import ControllerConfig
from controller.manager import Controller
from controller.resources import TFJOBS
from kube.api import KubeApi
from kube.patches import PatchType
from kube.resources import NAMESPACES, PODGROUPS_V1BETA1, PODS
from kube.workqueue import Backoff
from tests.polling import eventually
from tfjob.constants import REASON_ADMISSION_WEBHOOK_MISSING
from tfjob.facts import read_facts
from tfjob.pods import desired_pod
from tfjob.settings import Settings


def _job(name: str, namespace: str, workers: int) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "tensorflow", "image": "busybox:1.37.0-glibc"}]}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace, "uid": "u-1"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers, "template": template}}},
    }


@pytest.mark.parametrize(
    ("scheduler", "workers", "checked"),
    [
        ("volcano", 1, "annotations"),
        ("scheduler-plugins-scheduler", 1, "labels"),
        ("", 2, "tf_config"),
        ("", 1, None),
    ],
)
def test_what_the_answer_must_carry_follows_the_gang_mode(
    scheduler: str, workers: int, checked: str | None
) -> None:
    settings = Settings(gang_scheduler_name=scheduler)
    facts = read_facts(_job("j", "ns", workers))  # type: ignore[arg-type]
    pod = desired_pod(facts, facts.replica_types[0].rtype, 0)
    check = mutation_check(facts, pod, settings)
    if checked is None:
        assert check is None
        return
    assert check is not None
    assert check.needs_spec == (checked == "tf_config")
    assert bool(check.annotations) == (checked == "annotations")
    assert bool(check.labels) == (checked == "labels")
    assert not check.mutated(pod)


# (scheduler-plugins' PodGroup CRD is not installed on this sandbox: its marks are checked above.)
@pytest.mark.parametrize(("scheduler", "workers"), [("", 2), ("volcano", 2)])
async def test_without_a_webhook_every_pod_is_deleted_and_the_job_says_why(
    api: KubeApi, scheduler: str, workers: int
) -> None:
    namespace = f"admission-{scheduler or 'nogang'}-{workers}"
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    config = ControllerConfig(namespace=namespace, settings=Settings(gang_scheduler_name=scheduler))
    controller = Controller(api, config, backoff=Backoff(base=0.05, max=1.0))
    body = _job("bare", namespace, workers)
    del body["metadata"]["uid"]
    stop = asyncio.Event()
    run = asyncio.create_task(controller.run(stop))
    try:
        await api.create(TFJOBS, body, namespace)
        if scheduler == "volcano":
            await eventually(lambda: _podgroup(api, namespace), what="the PodGroup")
            admitted = {"status": {"phase": "Inqueue"}}
            await api.patch(PODGROUPS_V1BETA1, "bare", admitted, namespace, patch_type=PatchType.MERGE)

        async def refused() -> bool:
            job = await api.get(TFJOBS, "bare", namespace)
            conditions = (job.get("status") or {}).get("conditions") or []
            return any(c.get("reason") == REASON_ADMISSION_WEBHOOK_MISSING for c in conditions)

        await eventually(refused, what="the Created reason AdmissionWebhookMissing")
        assert controller.queue.num_requeues(f"{namespace}/bare") >= 1  # retried with back-off
        job = await api.get(TFJOBS, "bare", namespace)
        assert not (job.get("status") or {}).get("restartCounts")
    finally:
        stop.set()
        await run

    async def no_pods_left() -> bool:
        return not (await api.list(PODS, namespace)).get("items")

    await eventually(no_pods_left, what="every unmutated pod deleted")


async def _podgroup(api: KubeApi, namespace: str) -> bool:
    return bool((await api.list(PODGROUPS_V1BETA1, namespace)).get("items"))
