"""Every request the controller made during the integration tests is allowed by the chart's RBAC.

This test runs one job of its own, so that it checks a whole job's lifetime even when it runs
alone; the session fixture ``apiserver`` audits the whole run again when it ends
(``rbac_audit``), so no test depends on running last.
"""

from __future__ import annotations

from typing import Any

from .cluster import Cluster, admit_and_wait_for_pods, simple_job, wait_for_state
from .operator import controller_config, running_controller
from .rbac_audit import controller_requests, denied_requests


async def test_every_controller_request_of_a_job_s_lifetime_is_allowed_by_the_chart(
    apiserver: Any, cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(simple_job("audited", ns, workers=2))
        names = await admit_and_wait_for_pods(cluster, "audited", 2)
        await cluster.run_pods(names)
        await cluster.finish_pods(names)
        await wait_for_state(cluster, "audited", "Succeeded")

    requests = controller_requests(apiserver)
    resources = {resource for _, _, resource, _, _ in requests}
    assert {"tfjobs", "tfjobs/status", "pods", "services", "podgroups", "events"} <= resources
    assert denied_requests(requests) == [], "the controller made requests the chart's roles do not allow"
