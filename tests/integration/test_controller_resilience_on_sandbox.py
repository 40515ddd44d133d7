"""The controller survives being killed, shares the cluster with a second replica, and rides out
a compacted watch history: nothing is made twice, nothing is lost, only the leader acts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from controller.manager import Controller, LeadershipLost
from controller.resources import TFJOBS
from kube.api import KubeApi
from kube.client import make_api_client
from kube.resources import CONFIGMAPS, LEASES, NAMESPACES, PODS

from .cluster import (
    Cluster,
    admit_and_wait_for_pods,
    controller_writes,
    eventually,
    expire_watches,
    simple_job,
    wait_for_state,
)
from .operator import CONTROLLER_USER, controller_config, controller_process, metrics_text, running_controller


def _created(records: list[Any]) -> Counter[str]:
    """Successful creates by resource (a create names no object in its URL, so none by name)."""
    return Counter(r.resource for r in records if r.verb == "create")


async def test_controller_killed_mid_job_and_restarted_duplicates_nothing_and_loses_nothing(
    cluster: Cluster, controller_kubeconfig: str, apiserver: Any, workdir: Path
) -> None:
    ns = cluster.namespace
    flags = ("--namespace", ns, "--log-level", "DEBUG")
    with controller_process(controller_kubeconfig, workdir, *flags, name="first") as (first, _):
        await cluster.create_job(simple_job("phoenix", ns, workers=3, ps=1))
        await eventually(lambda: cluster.podgroup("phoenix"), what="the PodGroup")
        await cluster.set_podgroup_phase("phoenix", "Inqueue")
        # Kill it as soon as it starts making pods: some exist, some may not yet.
        await eventually(lambda: cluster.pods("phoenix"), within=10, interval=0.005, what="a first pod")
        first.kill()
        first.wait()

    with controller_process(controller_kubeconfig, workdir, *flags, name="second") as (second, ops_port):
        names = await admit_and_wait_for_pods(cluster, "phoenix", 4)
        await cluster.run_pods(names)
        await wait_for_state(cluster, "phoenix", "Running")
        await cluster.finish_pods(names)
        job = await wait_for_state(cluster, "phoenix", "Succeeded")
        successful = (
            f'training_operator_jobs_successful_total{{framework="tensorflow",job_namespace="{ns}"}} 1.0'
        )

        async def counted() -> str | None:
            # The pass counts the job once its status write has returned, which a reader of the
            # status may see a moment before.
            text = await asyncio.to_thread(metrics_text, ops_port)
            return text if successful in text else None

        metrics = await eventually(counted, within=5, what="the succeeded job counted")
        for name in (
            "created_pods_total",
            "succeeded_service_creation_total",
            "controller_runtime_reconcile_total",
            "workqueue_depth",
            "controller_runtime_reconcile_time_seconds_bucket",
        ):
            assert name in metrics, name
    assert second.returncode == 0, "SIGTERM is a graceful stop"

    writes = controller_writes(apiserver, CONTROLLER_USER, ns)
    # Nothing made twice: no pod or service deleted by the controller, at most one successful create each.
    # A create the killed controller had in flight can be stored while kube-apiserver's audit event
    # for it carries no 2xx answer (its client vanished), so a success may be missing from the log,
    # never extra; that every child exists is checked on the objects themselves.
    created = _created(writes)
    expected = {"pods": 4, "services": 4, "podgroups": 1}
    assert all(created[kind] <= count for kind, count in expected.items()), created
    assert not [r for r in writes if r.verb == "delete" and r.resource in ("pods", "services")]
    assert sorted(await cluster.pods("phoenix")) == names
    assert len(await cluster.services("phoenix")) == expected["services"]
    # The process logs JSON lines that name the job they are about.
    lines = [
        json.loads(line) for line in (workdir / "second.log").read_text().splitlines() if line.startswith("{")
    ]
    assert any(line.get("job") == f"{ns}/phoenix" and line.get("job_uid") for line in lines)
    assert [c["type"] for c in job["status"]["conditions"]] == ["Created", "Running", "Succeeded"]


async def test_two_controllers_only_the_leader_acts_and_the_follower_takes_over(
    cluster: Cluster, apiserver: Any, workdir: Path
) -> None:
    ns = cluster.namespace
    election = (
        "--namespace",
        ns,
        "--leader-elect",
        "--lease-namespace",
        ns,
        "--lease-name",
        "tfgang",
        "--lease-duration",
        "3",
        "--renew-deadline",
        "2",
        "--retry-period",
        "0.5",
    )
    users = {}
    for name in ("replica-a", "replica-b"):
        _token, kubeconfig = apiserver.add_user(name)
        users[name] = str(kubeconfig)
    with (
        controller_process(
            users["replica-a"], workdir, *election, "--identity", "replica-a", name="replica-a"
        ) as (process_a, _),
        controller_process(
            users["replica-b"], workdir, *election, "--identity", "replica-b", name="replica-b"
        ) as (process_b, _),
    ):
        # Both answered /readyz: a follower is ready too (its caches are synced).
        await cluster.create_job(simple_job("shared", ns, workers=2))
        names = await admit_and_wait_for_pods(cluster, "shared", 2)
        await cluster.run_pods(names)
        await wait_for_state(cluster, "shared", "Running")

        lease = await cluster.api.get(LEASES, "tfgang", ns)
        leader = lease["spec"]["holderIdentity"]
        follower = "replica-b" if leader == "replica-a" else "replica-a"
        assert controller_writes(apiserver, leader, ns), "the leader made the job's objects"
        assert controller_writes(apiserver, follower, ns) == [], "the follower wrote nothing"

        # The leader dies without releasing its Lease: the follower waits out the lease duration.
        killed_at = time.monotonic()
        dead = process_a if leader == "replica-a" else process_b
        dead.kill()
        dead.wait(timeout=10)
        # Counted once the process is gone: a write already in flight at the kill may still land.
        leader_writes = len(controller_writes(apiserver, leader, ns))
        await cluster.create_job(simple_job("after", ns))
        await eventually(lambda: cluster.podgroup("after"), within=15, what="the new leader acting")
        took_over = time.monotonic() - killed_at
        assert took_over < 3 + 2 + 3, f"failover took {took_over:.1f}s"
        lease = await cluster.api.get(LEASES, "tfgang", ns)
        assert lease["spec"]["holderIdentity"] == follower
        assert {r.user for r in controller_writes(apiserver, follower, ns)} == {follower}
        assert len(controller_writes(apiserver, leader, ns)) == leader_writes, "the dead leader wrote nothing"
        survivor = process_b if leader == "replica-a" else process_a
    assert survivor.returncode == 0, "a leader stops gracefully on SIGTERM"
    lease = await cluster.api.get(LEASES, "tfgang", ns)
    assert not lease["spec"].get("holderIdentity"), "and releases its Lease for the next replica"


async def test_a_compacted_watch_history_is_relisted_and_the_job_completes(
    cluster: Cluster, controller_kubeconfig: str, apiserver: Any
) -> None:
    ns = cluster.namespace
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)) as controller:
        await cluster.create_job(simple_job("gone", ns, workers=2))
        names = await admit_and_wait_for_pods(cluster, "gone", 2)
        # A write nobody watches, then compaction: every watcher's resourceVersion is now too old.
        await cluster.api.create(
            CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bump"}}, ns
        )
        await expire_watches(apiserver)
        await cluster.run_pods(names)  # changes made while the watches are down
        await wait_for_state(cluster, "gone", "Running")
        await cluster.finish_pods(names)
        await wait_for_state(cluster, "gone", "Succeeded")

        def list_counts() -> dict[str, int]:
            return {r._res.plural: r.list_count for r in controller.caches.reflectors}

        # A reflector whose watch saw no event (priorityclasses) took each end of it during the
        # outage as a failure and backs off further than the busy ones, up to the reflector's
        # 30 s cap: it may still be waiting to watch again when the job has finished.
        await eventually(
            lambda: all(count >= 2 for count in list_counts().values()), 40, what="every reflector relisted"
        )
    writes = controller_writes(apiserver, CONTROLLER_USER, ns)
    assert _created(writes) == {"pods": 2, "services": 2, "podgroups": 1}


async def test_a_leader_that_loses_its_lease_stops_acting_at_once(
    cluster: Cluster, controller_kubeconfig: str, apiserver: Any
) -> None:
    ns = cluster.namespace
    config = controller_config(namespace=ns, leader_identity="in-process", lease_namespace=ns)
    client = await make_api_client(controller_kubeconfig)
    api = KubeApi(client, qps=1000.0, burst=1000)
    controller = Controller(api, config)
    task = asyncio.create_task(controller.run())
    try:
        await eventually(lambda: _true(controller.leading), what="leadership")
        # Someone else takes the Lease over (say, after a partition) and keeps it fresh.
        lease = await cluster.api.get(LEASES, "tfgang-controller", ns)
        lease["spec"].update(holderIdentity="intruder", leaseDurationSeconds=60)
        await cluster.api.replace(LEASES, "tfgang-controller", lease, ns)
        with pytest.raises(LeadershipLost):
            async with asyncio.timeout(10):
                await task
        assert not controller.leading
        # From now on it makes no writes, even for a new job.
        before = len(controller_writes(apiserver, CONTROLLER_USER, ns))
        await cluster.create_job(simple_job("orphan", ns))
        await asyncio.sleep(0.5)
        assert len(controller_writes(apiserver, CONTROLLER_USER, ns)) == before
        assert await cluster.podgroup("orphan") is None
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, LeadershipLost):
            await task
        await api.close()


async def _true(value: bool) -> bool:
    return value


async def test_a_stranger_pod_with_a_replica_name_is_never_adopted(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    squatter = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "squat-worker-0", "namespace": ns},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.37.0-glibc"}]},
    }
    await cluster.api.create(PODS, squatter, ns)
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)) as controller:
        await cluster.create_job(simple_job("squat", ns, workers=2))
        await eventually(lambda: cluster.podgroup("squat"), what="the PodGroup")
        await cluster.set_podgroup_phase("squat", "Inqueue")

        async def failed_create_reported() -> bool:
            await controller.events.flush()
            return any(
                e["reason"] == "FailedCreatePod" and "not controlled by this job" in e["message"]
                for e in await cluster.events("squat")
            )

        await eventually(failed_create_reported, what="a FailedCreatePod event")
        pod = await cluster.api.get(PODS, "squat-worker-0", ns)
        assert not pod["metadata"].get("ownerReferences"), "the stranger's pod is left alone"
        assert "squat-worker-1" in await cluster.pods("squat"), "the other replica is made anyway"


async def test_namespace_flag_keeps_the_controller_to_its_namespace(
    cluster: Cluster, controller_kubeconfig: str
) -> None:
    ns = cluster.namespace
    other = f"{ns}-other"
    await cluster.api.create(
        NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}
    )
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.api.create(TFJOBS, simple_job("elsewhere", other), other)
        await cluster.create_job(simple_job("here", ns))
        await eventually(lambda: cluster.podgroup("here"), what="the PodGroup of the watched namespace")
        await asyncio.sleep(0.3)
        elsewhere = await cluster.api.get(TFJOBS, "elsewhere", other)
        assert "status" not in elsewhere or not elsewhere["status"], "a job outside --namespace is untouched"
