"""The sandbox's node agent reports pods as the real kubelet does.

Each scenario of ``kubelet_scenarios`` is played twice at once: on the one-node cluster (kubelet
v1.37 with containerd and runc, the busybox image) and on a fresh sandbox API server with the
sandbox's node agent, whose back-off has the kubelet's own 10 s base so that the back-off messages
can be compared word for word. A plain pod is bound to the node by ``nodeName``; the scenario's
views of it are reduced to a ``Verdict`` (the first status, the container's course through
terminations, back-off waits and restarts, the last status, the log where it matters), with the
pod's uid, namespace and node replaced by placeholders, and the two verdicts must be equal.

The kubelet is right: a difference is a defect of the sandbox, fixed there; docs/architecture.md
lists what this comparison found. A difference not fixed yet is a strict expected failure that
names its cause.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kube.api import KubeApi
from kube.client import make_api_client
from kube.resources import NODES
from tests.sandbox.kubelet.harness import sandbox_cluster

from .kubelet_scenarios import SCENARIOS, Scenario, play, verdict

pytestmark = [pytest.mark.real_node, pytest.mark.timeout(900)]  # the first test also starts the node

SANDBOX_NODE = "las1"
KUBELET_BACKOFF_SECONDS = 10.0


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=s.open_difference), id=str(s))
        if s.open_difference
        else pytest.param(s, id=str(s))
        for s in SCENARIOS
    ],
)
async def test_the_sandbox_node_agent_reports_as_the_kubelet(scenario: Scenario, one_node: Any) -> None:
    api = KubeApi(await make_api_client(str(one_node.kubeconfig)))
    try:
        (node,) = [n["metadata"]["name"] for n in (await api.list(NODES))["items"]]
        async with sandbox_cluster(
            SANDBOX_NODE, backoff_base=KUBELET_BACKOFF_SECONDS, scheduler=False, volcano_crds=False
        ) as sandbox:
            (kubelet, _), (agent, _) = await asyncio.gather(
                play(api, scenario, node), play(sandbox.api, scenario, SANDBOX_NODE)
            )
    finally:
        await api.close()
    assert verdict(agent) == verdict(kubelet)
