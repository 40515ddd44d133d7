"""Every request the controller made during the integration tests is allowed by the chart's RBAC.

This module's name sorts last, so in a run of ``tests/integration`` the sandbox's request log
holds every earlier test's requests under the controller's own user (the integration tests run
the controller as ``tfgang-controller``). The test first runs one job of its own, so that it
checks a whole job's lifetime even when it runs alone. ``tests/chart`` has the stricter companion
(the deployment's exact environment, and no grant left unused).
"""

from __future__ import annotations

from typing import Any

from tests.chart.rbac import allows, granted
from tests.chart.render import render_chart

from .cluster import Cluster, admit_and_wait_for_pods, simple_job, wait_for_state
from .operator import CONTROLLER_USER, controller_config, running_controller

RELEASE_NAMESPACE = "tfgang"
LEASE_NAME = controller_config(leader_identity="audit").leader_election.lease_name  # type: ignore[union-attr]


async def test_every_controller_request_of_the_run_is_allowed_by_the_chart(
    apiserver: Any, cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(simple_job("audited", ns, workers=2))
        names = await admit_and_wait_for_pods(cluster, "audited", 2)
        await cluster.run_pods(names)
        await cluster.finish_pods(names)
        await wait_for_state(cluster, "audited", "Succeeded")

    # The chart installed with the Lease name these tests give the controller.
    values = {"controller": {"leaderElection": {"leaseName": LEASE_NAME}}}
    grants = granted(render_chart(values, RELEASE_NAMESPACE, include_tests=False), CONTROLLER_USER)
    requests = {
        (r.verb, r.group, r.resource + (f"/{r.subresource}" if r.subresource else ""), r.namespace, r.name)
        for r in apiserver.request_log()
        if r.user == CONTROLLER_USER
    }
    resources = {resource for _, _, resource, _, _ in requests}
    assert {"tfjobs", "tfjobs/status", "pods", "services", "podgroups", "events"} <= resources

    denied = []
    for verb, group, resource, namespace, name in sorted(requests):
        # The chart keeps the Lease in the release namespace; the tests put it wherever they run.
        where = RELEASE_NAMESPACE if resource == "leases" else namespace
        if not allows(grants, verb=verb, group=group, resource=resource, namespace=where, name=name):
            denied.append((verb, group, resource, namespace, name))
    assert denied == [], "the controller made requests the chart's roles do not allow"
