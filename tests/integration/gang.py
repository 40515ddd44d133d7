"""The sandbox's Volcano-like gang scheduler for integration tests, with nodes of the test's choice.

Most integration tests play Volcano by writing PodGroup phases themselves; the tests of what the
TFJob says about a waiting gang need Volcano's own words, so they run a real scheduler against the
session's API server: the real Volcano's where it is installed (``realcluster.volcano``), else
the sandbox's (``sandbox.scheduler``) in-process, on nodes registered here
(no kubelet: bound pods stay Pending, which is all these tests need). The nodes' Ready condition is
kept fresh as a kubelet's heartbeat would: on kube-apiserver, kube-controller-manager's node
lifecycle controller marks a node that stops reporting Ready=Unknown and taints it unreachable
after 40 s, and a test slowed down by a busy machine would then wait for a binding that can no
longer happen. kube-apiserver also taints every new node ``node.kubernetes.io/not-ready``
(NoSchedule) until kube-controller-manager's node lifecycle sees it Ready and lifts the taint:
within two seconds on an idle server, but in full CI runs it was seen still there after 90 s, and
the tests waited for bindings that could not happen. So the helper lifts it itself once the nodes
report Ready, as it plays the kubelet's heartbeat.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import yaml

from kube.api import KubeApi
from kube.client import make_api_client
from kube.errors import NotFound
from kube.events import EventRecorder
from kube.patches import PatchType
from kube.resources import NODES
from kubeobjects.times import format_time
from realcluster.volcano import VolcanoCluster, volcano_scheduler_conf
from sandbox.scheduler.runner import Scheduler, SchedulerOptions

# Big enough that what earlier tests left behind in their namespaces never crowds these tests out.
ROOMY = {"cpu": "1000", "memory": "4000Gi", "pods": "1000"}
# What the node lifecycle puts on a node that is not (yet) Ready.
NODE_CONDITION_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
# A kubelet's default status update period; kube-controller-manager's grace period is 40 s.
HEARTBEAT_SECONDS = 10.0


def node(
    name: str, *, taints: Sequence[dict[str, str]] = (), labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": list(taints)},
    }


def runs_real_volcano(apiserver: Any) -> bool:
    """Whether the session's API server has the real Volcano beside it (its scheduler runs)."""
    return isinstance(apiserver, VolcanoCluster)


@contextlib.contextmanager
def volcano_actions(apiserver: Any, actions: str) -> Iterator[None]:
    """On the real Volcano, run its scheduler with these ``actions`` and the default
    configuration's plugins until the block ends, then restore the default (the scheduler
    reloads its configuration file on every change). Elsewhere nothing: the sandbox's scheduler
    has one fixed set of actions."""
    if not runs_real_volcano(apiserver):
        yield
        return
    default = volcano_scheduler_conf(apiserver.components)
    conf = yaml.safe_load(default)
    conf["actions"] = actions
    apiserver.volcano.set_scheduler_conf(yaml.safe_dump(conf, sort_keys=False))
    try:
        yield
    finally:
        apiserver.volcano.set_scheduler_conf(default)


@contextlib.asynccontextmanager
async def gang_scheduler(
    apiserver: Any, nodes: Sequence[dict[str, Any]], capacity: Mapping[str, str] = ROOMY
) -> AsyncIterator[KubeApi]:
    """Register ``nodes`` (Ready, each with ``capacity``) and, unless the real Volcano's scheduler
    already runs beside the API server, run the sandbox's gang scheduler until the block ends."""
    api = KubeApi(await make_api_client(str(apiserver.kubeconfig)), qps=1000.0, burst=1000)
    recorder = EventRecorder(api, "volcano")
    names = [str(n["metadata"]["name"]) for n in nodes]
    for body in nodes:
        await api.create(NODES, dict(body))
    await _report_ready(api, names, capacity)
    await _lift_condition_taints(api, names)

    async def heartbeats() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            with contextlib.suppress(Exception):  # a missed beat is made up by the next one
                await _report_ready(api, names, capacity)

    beating = asyncio.create_task(heartbeats())
    task: asyncio.Task[Any]
    if runs_real_volcano(apiserver):
        task = asyncio.create_task(asyncio.Event().wait())
    else:
        scheduler = Scheduler(
            api, recorder, SchedulerOptions(period=0.5, min_interval=0.1, volcano_sync_grace=0.5)
        )
        task = asyncio.create_task(scheduler.run())
    try:
        yield api
    finally:
        task.cancel()
        beating.cancel()
        await asyncio.gather(task, beating, return_exceptions=True)
        await recorder.close(drain_seconds=1)
        for name in names:
            with contextlib.suppress(NotFound):
                await api.delete(NODES, name)
        await api.close()


async def _lift_condition_taints(api: KubeApi, names: Sequence[str]) -> None:
    """Remove the node-condition taints, as the node lifecycle does once a node is Ready."""
    for name in names:
        taints = (await api.get(NODES, name))["spec"].get("taints") or []
        kept = [taint for taint in taints if taint.get("key") not in NODE_CONDITION_TAINTS]
        if kept != taints:
            await api.patch(NODES, name, {"spec": {"taints": kept}}, patch_type=PatchType.MERGE)


async def _report_ready(api: KubeApi, names: Sequence[str], capacity: Mapping[str, str]) -> None:
    now = format_time(datetime.now(UTC))
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "lastHeartbeatTime": now, "lastTransitionTime": now}  # fmt: skip
    status = {"capacity": dict(capacity), "allocatable": dict(capacity), "conditions": [ready]}
    for name in names:
        await api.patch(NODES, name, {"status": status}, patch_type=PatchType.MERGE, subresource="status")
