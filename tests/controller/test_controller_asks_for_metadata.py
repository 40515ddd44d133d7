"""The whole controller on the sandbox asks for metadata alone where it keeps no more: its
services' list and watch, and the answers to its pod and service creates. Pods are listed and
watched whole (the planner reads their status), PodGroups and TFJobs too. The request log records
the form each request asked for (kube-apiserver's audit events do not carry ``Accept``, so the
same check cannot run there; the forms themselves are compared with kube-apiserver's in
``tests/integration/test_sandbox_agrees_with_kube_apiserver.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

from controller.config import ControllerConfig
from controller.manager import Controller
from controller.resources import TFJOBS
from kube.api import KubeApi
from kube.client import make_api_client
from kube.patches import PatchType
from kube.resources import NAMESPACES, PODGROUPS_V1BETA1, SERVICES, Resource
from kube.workqueue import Backoff
from tests.polling import eventually

USER = "tfgang-controller-forms"
NAMESPACE = "metadata-forms"
OBJECT = ""
METADATA = "PartialObjectMetadata"
METADATA_LIST = "PartialObjectMetadataList"


def _job() -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "tensorflow", "image": "busybox:1.37.0-glibc"}]}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "forms", "namespace": NAMESPACE},
        "spec": {
            "tfReplicaSpecs": {
                "PS": {"replicas": 1, "template": template},
                "Worker": {"replicas": 2, "template": template},
            }
        },
    }


async def _admit_gang_then_wait_for_services(api: KubeApi, count: int) -> None:
    """Play Volcano (the PodGroup goes Inqueue, and only then are pods made), then wait for them."""

    async def items(res: Resource) -> list[Any]:
        listed: list[Any] = (await api.list(res, NAMESPACE)).get("items", [])
        return listed

    await eventually(lambda: items(PODGROUPS_V1BETA1), what="the job's PodGroup")
    admitted = {"status": {"phase": "Inqueue"}}
    await api.patch(PODGROUPS_V1BETA1, "forms", admitted, NAMESPACE, patch_type=PatchType.MERGE)

    async def services_made() -> bool:
        return len(await items(SERVICES)) >= count

    await eventually(services_made, what=f"{count} services")


async def test_the_controller_asks_for_metadata_alone_only_where_it_keeps_no_more(
    api: KubeApi, apiserver: Any
) -> None:
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    _token, kubeconfig = apiserver.add_user(USER)
    controller_api = KubeApi(await make_api_client(kubeconfig), qps=1000.0, burst=1000)
    controller = Controller(
        controller_api, ControllerConfig(namespace=NAMESPACE), backoff=Backoff(base=0.05, max=1.0)
    )
    stop = asyncio.Event()
    running = asyncio.create_task(controller.run(stop))
    try:
        await api.create(TFJOBS, _job(), NAMESPACE)
        await _admit_gang_then_wait_for_services(api, 3)
    finally:
        stop.set()
        await asyncio.wait_for(running, 15)
        await controller_api.close()

    forms: dict[tuple[str, str], set[str]] = {}
    for record in apiserver.request_log():
        if record.user == USER and 200 <= record.code < 300:
            forms.setdefault((record.verb, record.resource), set()).add(record.form)
    assert forms[("list", "services")] == {METADATA_LIST}
    assert forms[("watch", "services")] == {METADATA}
    assert forms[("create", "services")] == {METADATA}
    assert forms[("create", "pods")] == {METADATA}
    assert forms[("list", "pods")] == forms[("watch", "pods")] == {OBJECT}
    assert forms[("create", "podgroups")] == {OBJECT}
    assert forms[("list", "tfjobs")] == forms[("watch", "tfjobs")] == {OBJECT}
