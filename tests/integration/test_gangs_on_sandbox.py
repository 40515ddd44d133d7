"""Per-role gangs, run with the sandbox's real gang scheduler on both API servers.

``schedulingPolicy.minAvailable`` below the total lets Volcano start a gang of workers without its
parameter server (training-operator sets ``minMember`` only); tfgang's PodGroup carries
``minTaskMember``, so the gang waits, says why (``NotEnoughPodsOfTask``), and starts once the PS fits.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kube.patches import PatchType
from kube.resources import NODES

from .cluster import Cluster, condition, eventually, simple_job
from .gang import gang_scheduler, node
from .operator import controller_config, running_controller

GRACE = 1.0  # the controller reports a reason once it has held this long
PS_HOST_LABEL = "tfgang.test/ps-host"


def _bound(pods: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(name for name, pod in pods.items() if (pod.get("spec") or {}).get("nodeName"))


async def test_a_job_with_min_available_below_its_total_waits_until_its_ps_fits(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    host = f"gangs-{uuid.uuid4().hex[:6]}"
    job = simple_job("pergang", ns, workers=2, ps=1, run_policy={"schedulingPolicy": {"minAvailable": 2}})
    # The PS fits only on a node labelled for it, and there is none yet; the workers fit anywhere.
    ps_host = f"{host}-{ns}"
    job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["nodeSelector"] = {PS_HOST_LABEL: ps_host}
    config = controller_config(namespace=ns, pending_reason_grace_seconds=GRACE)
    async with (
        gang_scheduler(str(apiserver.kubeconfig), [node(host)]) as admin,
        running_controller(controller_kubeconfig, config),
    ):
        await cluster.create_job(job)

        async def podgroup_with_roles() -> dict[str, Any] | None:
            found = await cluster.podgroup("pergang")
            return found if found and (found.get("spec") or {}).get("minTaskMember") else None

        podgroup = await eventually(podgroup_with_roles, 30, what="the PodGroup with minTaskMember")
        assert podgroup["spec"]["minMember"] == 2
        assert podgroup["spec"]["minTaskMember"] == {"ps": 1, "worker": 1}

        async def says_why() -> str | None:
            message = str((condition(await cluster.job("pergang"), "Created") or {}).get("message") or "")
            return message if "NotEnoughPodsOfTask" in message else None

        message = await eventually(says_why, 60, what="the Created condition naming NotEnoughPodsOfTask")
        assert "PodGroup pergang is Inqueue (NotEnoughPodsOfTask)" in message
        assert "task ps: 0/1 of minTaskMember" in message
        pods = await cluster.pods("pergang")
        assert sorted(pods) == ["pergang-ps-0", "pergang-worker-0", "pergang-worker-1"]
        # Two workers would make minMember, and they fit: without minTaskMember they would be bound.
        await asyncio.sleep(2)
        assert _bound(await cluster.pods("pergang")) == []

        await admin.patch(
            NODES, host, {"metadata": {"labels": {PS_HOST_LABEL: ps_host}}}, patch_type=PatchType.MERGE
        )

        async def all_bound() -> list[str] | None:
            bound = _bound(await cluster.pods("pergang"))
            return bound if len(bound) == 3 else None

        assert await eventually(all_bound, 60, what="the whole gang bound once its PS fits") == [
            "pergang-ps-0",
            "pergang-worker-0",
            "pergang-worker-1",
        ]
