"""kube-apiserver restarted mid-job on the same etcd: every job finishes, nothing is made twice.

The controller's watches end and its writes fail while the server is down; it must relist,
retry what did not land and not repeat what did. Only a real API server has a store that
outlives the server process, so this runs on kube-apiserver alone.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from .cluster import Cluster, admit_and_wait_for_pods, controller_writes, simple_job, wait_for_state
from .operator import CONTROLLER_USER, controller_config, running_controller

JOBS = ("before", "during", "after")


@pytest.mark.only_on_kube_apiserver("a store that outlives the API server process")
@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
async def test_kube_apiserver_restarted_mid_job_every_job_finishes_and_nothing_is_duplicated(
    cluster: Cluster, controller_kubeconfig: str, apiserver: Any, kill: bool
) -> None:
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        pods: dict[str, list[str]] = {}
        for name in JOBS[:2]:
            await cluster.create_job(simple_job(name, ns, workers=2, ps=1))
            pods[name] = await admit_and_wait_for_pods(cluster, name, 3)
            await cluster.run_pods(pods[name])
            await wait_for_state(cluster, name, "Running")
        # "before" finishes just ahead of the restart: its status write races the shutdown.
        await cluster.finish_pods([n for n in pods["before"] if "worker" in n])
        await asyncio.to_thread(apiserver.restart_apiserver, kill=kill, grace=60.0)

        await cluster.create_job(simple_job("after", ns, workers=2, ps=1))
        pods["after"] = await admit_and_wait_for_pods(cluster, "after", 3, within=30)
        await cluster.run_pods(pods["after"])
        await wait_for_state(cluster, "after", "Running", within=30)
        await cluster.finish_pods([n for n in pods["during"] + pods["after"] if "worker" in n])
        jobs = {name: await wait_for_state(cluster, name, "Succeeded", within=30) for name in JOBS}
        await asyncio.sleep(0.5)  # a late duplicate would show up now

    for name, job in jobs.items():
        assert [c["type"] for c in job["status"]["conditions"]] == ["Created", "Running", "Succeeded"], name
        assert sorted(await cluster.pods(name)) == pods[name], name
        assert len(await cluster.services(name)) == 3, name
    writes = controller_writes(apiserver, CONTROLLER_USER, ns)
    created = Counter((r.resource) for r in writes if r.verb == "create")
    assert created == {"pods": 9, "services": 9, "podgroups": 3}, created
