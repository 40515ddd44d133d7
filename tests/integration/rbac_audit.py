"""Which of the controller's requests in the sandbox's request log the chart's RBAC does not allow.

The integration tests run the controller as its own user (``tfgang-controller``), so the request
log tells its requests apart. The audit runs twice: in a test of its own, after a whole job's
lifetime, and once more when the session's API server shuts down, over every request of the run,
whatever order the tests ran in. ``tests/chart`` has the stricter companion (the deployment's
exact environment, and no grant left unused).
"""

from __future__ import annotations

from typing import Any

from tests.chart.rbac import allows, granted
from tests.chart.render import render_chart

from .operator import CONTROLLER_USER, controller_config

RELEASE_NAMESPACE = "tfgang"
LEASE_NAME = controller_config(leader_identity="audit").leader_election.name  # type: ignore[union-attr]

Request = tuple[str, str, str, str, str]  # verb, group, resource[/subresource], namespace, name


def controller_requests(apiserver: Any) -> set[Request]:
    return {
        (r.verb, r.group, r.resource + (f"/{r.subresource}" if r.subresource else ""), r.namespace, r.name)
        for r in apiserver.request_log()
        if r.user == CONTROLLER_USER
    }


def denied_requests(requests: set[Request]) -> list[Request]:
    """The requests the chart, installed with the Lease name these tests use, does not allow."""
    values = {"controller": {"leaderElection": {"leaseName": LEASE_NAME}}}
    grants = granted(render_chart(values, RELEASE_NAMESPACE, include_tests=False), CONTROLLER_USER)
    denied = []
    for verb, group, resource, namespace, name in sorted(requests):
        # The chart keeps the Lease in the release namespace; the tests put it wherever they run.
        where = RELEASE_NAMESPACE if resource == "leases" else namespace
        if not allows(grants, verb=verb, group=group, resource=resource, namespace=where, name=name):
            denied.append((verb, group, resource, namespace, name))
    return denied
