"""Per-role gangs and network topology, run with the sandbox's real gang scheduler on both API servers.

``schedulingPolicy.minAvailable`` below the total lets Volcano start a gang of workers without its
parameter server (training-operator sets ``minMember`` only); tfgang's PodGroup carries
``minTaskMember``, so the gang waits, says why in Volcano's words (``NotEnoughResources``, the PS's
fit error as the origin), and starts once the PS fits. A job annotated
``tfgang.io/network-topology`` gets the PodGroup's ``networkTopology``: in hard mode it waits,
saying so, until one HyperNode of the allowed tier has room, and runs inside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from typing import Any

from controller.resources import TFJOBS
from kube.errors import NotFound
from kube.patches import PatchType
from kube.resources import NODES
from sandbox.scheduler.runner import HYPERNODES

from .cluster import Cluster, condition, eventually, simple_job
from .gang import gang_scheduler, node
from .operator import controller_config, running_controller

GRACE = 1.0  # the controller reports a reason once it has held this long
PS_HOST_LABEL = "tfgang.test/ps-host"
# Volcano tries pergang-worker-0 and pergang-ps-0 (both index 0) oldest first, then by uid, so
# either comes first: one worker placed before the PS stops the gang (1 left to make minMember),
# or the PS first (2 left). Either way the PS's fit error is the origin.
PS_NOWHERE = re.compile(
    r"PodGroup pergang is Inqueue \(NotEnoughResources\): "
    r"(1/3 tasks in gang unschedulable: pod group is not ready, 2 minAvailable, 3 Pending; "
    r"Pending: 1 Schedulable, 2 Unschedulable"
    r"|2/3 tasks in gang unschedulable: pod group is not ready, 2 minAvailable, 3 Pending; "
    r"Pending: 3 Unschedulable)"
    r"\. Origin reason is pergang-ps-0: 0/1 nodes are unavailable: "
    r"1 node\(s\) didn't match Pod's node affinity/selector\.$"
)


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
        gang_scheduler(apiserver, [node(host)]) as admin,
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
            return message if "Origin reason is pergang-ps-0" in message else None

        message = await eventually(says_why, 60, what="the Created condition naming the PS's fit error")
        assert PS_NOWHERE.search(message), message
        pods = await cluster.pods("pergang")
        assert sorted(pods) == ["pergang-ps-0", "pergang-worker-0", "pergang-worker-1"]
        ps_scheduled = next(
            c for c in pods["pergang-ps-0"]["status"]["conditions"] if c["type"] == "PodScheduled"
        )
        assert (ps_scheduled["status"], ps_scheduled["reason"], ps_scheduled["message"]) == (
            "False",
            "Unschedulable",
            "0/1 nodes are unavailable: 1 node(s) didn't match Pod's node affinity/selector.",
        )
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


def _hypernode(
    name: str, tier: int, members: list[str], *, tier_name: str = "", member_type: str = "Node"
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "tier": tier,
        "members": [{"type": member_type, "selector": {"exactMatch": {"name": m}}} for m in members],
    }
    if tier_name:
        spec["tierName"] = tier_name
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": spec,
    }


async def test_a_hard_topology_job_waits_with_the_topology_reason_then_runs_inside_one_hypernode(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    suffix = uuid.uuid4().hex[:6]
    hosts = [f"topo-{suffix}-{i}" for i in range(3)]
    switches = [f"switch-{suffix}-{i}" for i in range(3)]
    job = simple_job("placed", ns, workers=2)
    job["metadata"]["annotations"] = {
        "tfgang.io/network-topology": '{"mode": "hard", "highestTierAllowed": 1}'
    }
    for spec in job["spec"]["tfReplicaSpecs"].values():  # two of them never fit one node
        spec["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "600", "memory": "10Mi"}}
    config = controller_config(namespace=ns, pending_reason_grace_seconds=GRACE)
    async with (
        gang_scheduler(apiserver, [node(host) for host in hosts]) as admin,
        running_controller(controller_kubeconfig, config),
    ):
        for switch, host in zip(switches, hosts, strict=True):
            await admin.create(HYPERNODES, _hypernode(switch, 1, [host]))
        try:
            await cluster.create_job(job)
            podgroup = await eventually(lambda: cluster.podgroup("placed"), 30, what="the PodGroup")
            assert podgroup["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}

            async def says_why() -> str | None:
                message = str((condition(await cluster.job("placed"), "Created") or {}).get("message") or "")
                return message if "PodGroup placed is Inqueue" in message else None

            # No HyperNode of tier 1 has idle room for the gang's minResources, so Volcano's
            # network-topology-aware plugin offers none to try: no pod has a fit error of its own.
            message = await eventually(says_why, 60, what="the Created condition naming the PodGroup")
            assert message.endswith(
                "PodGroup placed is Inqueue (NotEnoughResources): 2/2 tasks in gang unschedulable: "
                "pod group is not ready, 2 Pending, 2 minAvailable; Pending: 2 Unschedulable"
            ), message
            assert _bound(await cluster.pods("placed")) == []

            # The first switch gets a second node: the gang fits there, and only there.
            await admin.patch(
                HYPERNODES,
                switches[0],
                {"spec": {"members": _hypernode(switches[0], 1, [hosts[0], hosts[2]])["spec"]["members"]}},
                patch_type=PatchType.MERGE,
            )

            async def all_bound() -> dict[str, dict[str, Any]] | None:
                pods = await cluster.pods("placed")
                return pods if len(_bound(pods)) == 2 else None

            pods = await eventually(all_bound, 60, what="the gang bound inside one HyperNode")
            assert sorted(pod["spec"]["nodeName"] for pod in pods.values()) == sorted([hosts[0], hosts[2]])
        finally:
            for switch in switches:
                with contextlib.suppress(NotFound):
                    await admin.delete(HYPERNODES, switch)


async def test_a_hard_gang_that_fits_no_leaf_runs_once_its_annotation_names_the_spine_tier(
    cluster: Cluster, apiserver: Any, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    suffix = uuid.uuid4().hex[:6]
    hosts = [f"tier-{suffix}-{i}" for i in range(2)]
    leaves = [f"leaf-{suffix}-{i}" for i in range(2)]
    spine = f"spine-{suffix}"
    job = simple_job("spread", ns, workers=2)
    job["metadata"]["annotations"] = {
        "tfgang.io/network-topology": '{"mode": "hard", "highestTierName": "leaf"}'
    }
    for spec in job["spec"]["tfReplicaSpecs"].values():  # two of them never fit one node
        spec["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "600", "memory": "10Mi"}}
    config = controller_config(namespace=ns, pending_reason_grace_seconds=GRACE)
    async with (
        gang_scheduler(apiserver, [node(host) for host in hosts]) as admin,
        running_controller(controller_kubeconfig, config),
    ):
        for leaf, host in zip(leaves, hosts, strict=True):
            await admin.create(HYPERNODES, _hypernode(leaf, 1, [host], tier_name="leaf"))
        await admin.create(
            HYPERNODES, _hypernode(spine, 2, leaves, tier_name="spine", member_type="HyperNode")
        )
        try:
            await cluster.create_job(job)
            podgroup = await eventually(lambda: cluster.podgroup("spread"), 30, what="the PodGroup")
            assert podgroup["spec"]["networkTopology"] == {"mode": "hard", "highestTierName": "leaf"}
            await asyncio.sleep(5)  # several scheduling periods: no leaf holds both workers
            assert _bound(await cluster.pods("spread")) == []

            spine_allowed = '{"mode": "hard", "highestTierName": "spine"}'
            await cluster.api.patch(
                TFJOBS,
                "spread",
                {"metadata": {"annotations": {"tfgang.io/network-topology": spine_allowed}}},
                ns,
                patch_type=PatchType.MERGE,
            )

            async def all_bound() -> dict[str, dict[str, Any]] | None:
                pods = await cluster.pods("spread")
                return pods if len(_bound(pods)) == 2 else None

            pods = await eventually(all_bound, 60, what="the gang bound across the spine once allowed")
            assert sorted(pod["spec"]["nodeName"] for pod in pods.values()) == sorted(hosts)
        finally:
            for name in (*leaves, spine):
                with contextlib.suppress(NotFound):
                    await admin.delete(HYPERNODES, name)
