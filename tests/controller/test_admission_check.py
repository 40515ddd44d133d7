"""What the controller reads from a pod create's answer to know the mutating webhook ran, for each
gang mode, on a sandbox API server with no webhook registered (so no pod is ever mutated).

- Volcano: the group-name annotation; scheduler-plugins: the pod-group label (both metadata);
- gang scheduling off: the webhook adds only TF_CONFIG, to distributed jobs, so the whole pod is
  asked back and its env read; a one-replica job gets nothing from the webhook and is not checked.

Every unmutated pod's watch events wake nobody, so the job's failing passes come no sooner than the
work queue's back-off allows (were the events to wake the job, each retry would bring another pass
at once, and the back-off would not slow anything down).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from controller.admission import mutation_check
from controller.config import ControllerConfig
from controller.manager import Controller
from controller.reconciler import PassResult
from controller.resources import TFJOBS
from kube.api import KubeApi
from kube.patches import PatchType
from kube.resources import NAMESPACES, PODGROUPS_V1BETA1, PODS
from kube.workqueue import Backoff
from tests.polling import eventually
from tfjob.constants import REASON_ADMISSION_WEBHOOK_MISSING
from tfjob.facts import read_facts
from tfjob.planner import Observed, plan
from tfjob.planner.waiting import unadmitted_pod_status
from tfjob.pods import desired_pod
from tfjob.settings import Settings

BACKOFF = Backoff(base=0.05, max=1.0)


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
    api: KubeApi, scheduler: str, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    namespace = f"admission-{scheduler or 'nogang'}-{workers}"
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    config = ControllerConfig(namespace=namespace, settings=Settings(gang_scheduler_name=scheduler))
    controller = Controller(api, config, backoff=BACKOFF)
    body = _job("bare", namespace, workers)
    del body["metadata"]["uid"]
    passes: list[tuple[float, float, bool]] = []  # (started, ended, failed)
    reconcile = controller.reconciler.reconcile

    async def timed(key: str) -> PassResult:
        started = time.monotonic()
        try:
            result = await reconcile(key)
        except Exception:
            passes.append((started, time.monotonic(), True))
            raise
        passes.append((started, time.monotonic(), False))
        return result

    monkeypatch.setattr(controller.reconciler, "reconcile", timed)
    stop = asyncio.Event()
    run = asyncio.create_task(controller.run(stop))
    key = f"{namespace}/bare"
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

        async def retried(times: int) -> bool:
            return controller.queue.num_requeues(key) >= times

        await eventually(lambda: retried(6), what="six retries with back-off")
        # From the third failure on (the first passes may meet early events of the services and
        # pods they made), each pass waits out the back-off of the failures before it.
        failures = 0
        for (_, ended, failed), (started, _, _) in itertools.pairwise(passes):
            failures = failures + 1 if failed else 0
            if failures >= 3:
                assert started - ended >= BACKOFF.delay(failures) * 0.95, (failures, passes)
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


def test_the_refusal_reason_changes_the_created_condition_in_place_and_a_clean_pass_restores_it() -> None:
    """A Running job whose lost pod cannot be recreated keeps its State column (the last entry):
    the Created condition's reason changes where it stands, and back."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    job = _job("j", "ns", 2)
    job["status"] = {
        "conditions": [
            {"type": "Created", "status": "True", "reason": "TFJobCreated", "message": "TFJob j is created."},
            {"type": "Running", "status": "True", "reason": "TFJobRunning", "message": "running"},
        ]
    }
    refused = unadmitted_pod_status(
        job["status"], "j", "the mutating webhook did not run on pod j-worker-1", now
    )
    types = [(c["type"], c["reason"]) for c in refused["conditions"]]
    assert types == [("Created", REASON_ADMISSION_WEBHOOK_MISSING), ("Running", "TFJobRunning")]
    assert "did not run on pod j-worker-1" in refused["conditions"][0]["message"]

    job["status"] = refused
    result = plan(Observed(job, [], [], None, {}), now, Settings(gang_scheduler_name=""))  # type: ignore[arg-type]
    types = [(c["type"], c["reason"]) for c in result.status["conditions"]]
    assert types[0] == ("Created", "TFJobCreated") and types[-1][0] != "Created"

    finished = {"conditions": [{"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded"}]}
    assert unadmitted_pod_status(finished, "j", "why", now) == finished  # type: ignore[arg-type]
