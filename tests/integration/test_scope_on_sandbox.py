"""One scope: a TFJob in a namespace outside the controller's scope is left alone and says so, once;
the namespace entering the scope wakes it.

The chart renders the same selector into the webhooks and the controller
(``tests/chart/test_chart_scope.py``); here the controller runs with a selector that asks for an
opt-in label, and the test's namespace starts without it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from controller.scope import EVENT_OUTSIDE_SCOPE, parse_namespace_selector
from kube.patches import PatchType
from kube.resources import NAMESPACES, PODS

from .cluster import Cluster, eventually, simple_job
from .operator import controller_config, running_controller

OPT_IN = "tfgang-test.kubeflow.org/serve"
SELECTOR = f'{{"matchExpressions":[{{"key":"{OPT_IN}","operator":"In","values":["yes"]}}]}}'


async def _outside_scope_events(cluster: Cluster, job: str) -> list[dict[str, Any]]:
    return [event for event in await cluster.events(job) if event.get("reason") == EVENT_OUTSIDE_SCOPE]


async def test_a_tfjob_outside_the_scope_is_left_alone_with_one_event_until_its_namespace_joins(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    config = dataclasses.replace(controller_config(namespace=ns), scope=parse_namespace_selector(SELECTOR))
    async with running_controller(controller_kubeconfig, config):
        await cluster.create_job(simple_job("outside", ns, workers=2))

        [event] = await eventually(
            lambda: _outside_scope_events(cluster, "outside"), what="OutsideScope event"
        )
        assert event["type"] == "Warning"
        assert f'namespace "{ns}"' in event["message"]
        assert "--namespace-selector" in event["message"] and OPT_IN in event["message"]
        assert "chart's value scope" in event["message"]
        # Left alone: nothing made, nothing written, and told once (the job has not changed).
        await asyncio.sleep(1.0)
        assert await cluster.podgroup("outside") is None
        assert await cluster.pods("outside") == {}
        assert not (await cluster.job("outside")).get("status")
        [event] = await _outside_scope_events(cluster, "outside")
        assert event.get("count", 1) == 1

        # The namespace opts in: the controller takes the job up without being restarted.
        labels = {"metadata": {"labels": {OPT_IN: "yes"}}}
        await cluster.api.patch(NAMESPACES, ns, labels, patch_type=PatchType.MERGE)
        await eventually(lambda: cluster.podgroup("outside"), what="the job's PodGroup once in scope")
        assert not [pod for pod in (await cluster.api.list(PODS, ns)).get("items") or ()]
