"""Leave no resources held behind: integration tests share one API server and never delete their
namespaces, and a gang scheduler -- the real Volcano's runs beside v1.37 all session long --
counts every bound pod and every admitted PodGroup against its queue (a gang that does not fit
what earlier tests left is never enqueued). After each test the ``cluster`` fixture removes its
jobs, PodGroups and pods (at once: no kubelet runs to finish a graceful delete)."""

from __future__ import annotations

import contextlib

from controller.resources import TFJOBS
from kube.errors import NotFound
from kube.resources import PODGROUPS_V1BETA1, PODS

from .cluster import Cluster


async def remove_jobs_and_gangs(cluster: Cluster) -> None:
    for resource in (TFJOBS, PODGROUPS_V1BETA1):
        listed = await cluster.api.list(resource, cluster.namespace)
        for item in listed.get("items") or ():
            with contextlib.suppress(NotFound):
                await cluster.api.delete(resource, item["metadata"]["name"], cluster.namespace)
    listed = await cluster.api.list(PODS, cluster.namespace)
    for pod in listed.get("items") or ():
        await cluster.force_delete_pod(pod["metadata"]["name"])
