"""tfgang's webhooks beside Volcano's, on kube-apiserver v1.37 with the real Volcano.

A TFJob's pod CREATE passes both: kube-apiserver calls every mutating webhook first (tfgang's
adds ``TF_CONFIG`` and the gang annotations; Volcano's ``/pods/mutate`` runs after it), then the
validating ones, Volcano's ``/pods/validate`` among them. The pods come out mutated once, and a
pod that Volcano's admission refuses is explained on the TFJob, not left as a silent wait.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kube.resources import MUTATING_WEBHOOK_CONFIGURATIONS
from tfjob.constants import ANNOTATION_GROUP_NAME

from .cluster import Cluster, condition, eventually, simple_job
from .gang import gang_scheduler, node
from .operator import WEBHOOK_NAME, controller_config, running_controller

pytestmark = pytest.mark.only_with_real_volcano("Volcano's own pod webhooks run only beside the real Volcano")

TASK_SPEC = "volcano.sh/task-spec"
BUDGET = "volcano.sh/jdb-min-available"  # a pod annotation Volcano's /pods/validate checks


def _tf_configs(pod: dict[str, Any]) -> list[str]:
    return [
        str(variable.get("value"))
        for container in pod["spec"]["containers"]
        if container["name"] == "tensorflow"
        for variable in container.get("env") or ()
        if variable.get("name") == "TF_CONFIG"
    ]


async def test_both_webhooks_admit_a_jobs_pods_and_tfgangs_mutation_is_made_once(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    configurations = await cluster.api.list(MUTATING_WEBHOOK_CONFIGURATIONS)
    names = sorted(item["metadata"]["name"] for item in configurations["items"])
    # kube-apiserver calls mutating webhooks in the order of their configurations' names.
    assert WEBHOOK_NAME in names and "volcano-admission-service-pods-mutate" in names
    assert names.index(WEBHOOK_NAME) < names.index("volcano-admission-service-pods-mutate")

    job = simple_job("both", ns, workers=2, ps=1)
    async with (
        gang_scheduler(apiserver, [node(f"both-{uuid.uuid4().hex[:6]}")]),
        running_controller(controller_kubeconfig, controller_config(namespace=ns)),
    ):
        await cluster.create_job(job)

        async def three_pods() -> dict[str, dict[str, Any]] | None:
            pods = await cluster.pods("both")
            return pods if len(pods) == 3 else None

        pods = await eventually(three_pods, 60, what="the job's three pods, admitted by both webhooks")
        for name, pod in pods.items():
            annotations = pod["metadata"].get("annotations") or {}
            assert annotations.get(ANNOTATION_GROUP_NAME) == "both", name
            assert annotations.get(TASK_SPEC) == ("ps" if "-ps-" in name else "worker"), name
            assert pod["spec"]["schedulerName"] == "volcano", name
            assert len(_tf_configs(pod)) == 1, name


async def test_a_pod_volcanos_admission_refuses_is_explained_on_the_tfjob(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    job = simple_job("budget", ns)
    template = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]
    template["metadata"] = {"annotations": {BUDGET: "most"}}
    async with (
        gang_scheduler(apiserver, [node(f"budget-{uuid.uuid4().hex[:6]}")]),
        running_controller(controller_kubeconfig, controller_config(namespace=ns)),
    ):
        await cluster.create_job(job)

        async def refused() -> str | None:
            message = str((condition(await cluster.job("budget"), "Created") or {}).get("message") or "")
            return message if "pod budget-worker-0 cannot be created" in message else None

        message = await eventually(refused, 60, what="the Created condition naming Volcano's refusal")
        assert message.startswith("TFJob budget is created. pod budget-worker-0 cannot be created: ")
        assert 'admission webhook "validatepod.volcano.sh" denied the request' in message
        assert message.endswith(f'invalid value strconv.Atoi: parsing "most": invalid syntax for {BUDGET}')
        assert await cluster.pods("budget") == {}
