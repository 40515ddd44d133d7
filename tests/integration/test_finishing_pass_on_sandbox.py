"""The pass that finishes a job writes its verdict before its cleanup: a controller that dies
amid the cleanup leaves a finished job, and its successor does not make the PodGroup again
(a chaos run killed the controller between the PodGroup's deletion and the status write)."""

from __future__ import annotations

from typing import Any

from kube.errors import InternalError
from tfjob.planner.actions import Action, DeletePodGroup
from tfjob.planner.observed import Observed

from .cluster import (
    Cluster,
    admit_and_wait_for_pods,
    controller_writes,
    eventually,
    simple_job,
    wait_for_state,
)
from .operator import CONTROLLER_USER, controller_config, running_controller


async def test_the_verdict_is_written_before_the_cleanup_that_may_not_happen(
    cluster: Cluster, controller_kubeconfig: str, apiserver: Any
) -> None:
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)) as controller:
        runner = controller.reconciler.runner
        original = runner.run

        async def no_cleanup(observed: Observed, action: Action) -> Any:
            # The controller "dies" here, every time: the PodGroup is never deleted.
            if isinstance(action, DeletePodGroup):
                raise InternalError(500, "InternalError", "killed before the cleanup")
            return await original(observed, action)

        runner.run = no_cleanup  # type: ignore[method-assign]
        await cluster.create_job(simple_job("verdict", ns, workers=2))
        names = await admit_and_wait_for_pods(cluster, "verdict", 2)
        await cluster.run_pods(names)
        await wait_for_state(cluster, "verdict", "Running")
        await cluster.finish_pods(["verdict-worker-0"])
        await wait_for_state(cluster, "verdict", "Succeeded")
        assert await cluster.podgroup("verdict") is not None, "the cleanup has not happened"
        runner.run = original  # type: ignore[method-assign]
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        async def podgroup_gone() -> bool:
            return await cluster.podgroup("verdict") is None

        await eventually(podgroup_gone, what="the successor's cleanup")
    writes = controller_writes(apiserver, CONTROLLER_USER, ns)
    podgroup_writes = [r for r in writes if r.resource == "podgroups"]
    assert [r.verb for r in podgroup_writes] == ["create", "delete"]
