"""``kubectl tfjob logs``: a replica's log by its role, from the sandbox's node agent, via real kubectl."""

from __future__ import annotations

import asyncio
import subprocess

from kube.resources import PODS
from kubectl_tfjob.resources import TFJOBS
from tests.sandbox.kubelet.harness import eventually, get_pod, pod_manifest, sandbox_cluster, status_column

from .plugin import plugin, via_kubectl


def _tfjob(name: str) -> dict[str, object]:
    container = {"name": "tensorflow", "image": "busybox"}
    replica = {"replicas": 1, "template": {"spec": {"containers": [container]}}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"PS": replica, "Worker": {**replica, "replicas": 2}}},
    }


def _replica_pod(job: str, rtype: str, index: int, script: str) -> dict[str, object]:
    pod = pod_manifest(f"{job}-{rtype}-{index}", script, restart_policy="Never")
    pod["spec"]["containers"][0]["name"] = "tensorflow"  # type: ignore[index]
    pod["spec"]["containers"].append(  # type: ignore[index]
        {"name": "sidecar", "image": "busybox", "command": ["sh", "-c", "echo from the sidecar"]}
    )
    pod["metadata"]["labels"] = {  # type: ignore[index]
        "training.kubeflow.org/operator-name": "tfjob-controller",
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/replica-type": rtype,
        "training.kubeflow.org/replica-index": str(index),
    }
    return pod


async def _run(*args: str, kubectl: bool = False) -> subprocess.CompletedProcess[str]:
    # In a thread: the node agent serving the log runs on this event loop.
    return await asyncio.to_thread(via_kubectl if kubectl else plugin, *args)


async def test_logs_of_a_replica_by_role_default_replica_follow_and_bad_replicas() -> None:
    async with sandbox_cluster() as cluster:
        kc = cluster.handle.kubeconfig
        await cluster.api.create(TFJOBS, _tfjob("lj"), "default")
        for rtype, index in (("ps", 0), ("worker", 0), ("worker", 1)):
            script = f"echo {rtype} {index} says hello; sleep 0.3; echo {rtype} {index} done"
            await cluster.api.create(PODS, _replica_pod("lj", rtype, index, script))

        async def all_done() -> bool:
            pods = [await get_pod(cluster.api, f"lj-{n}") for n in ("ps-0", "worker-0", "worker-1")]
            return all(status_column(pod) == "Completed" for pod in pods)

        await eventually(all_done, what="the three replicas to finish")
        worker1 = await _run("logs", "lj", "--replica", "worker-1", "--kubeconfig", kc, kubectl=True)
        assert (worker1.returncode, worker1.stdout) == (0, "worker 1 says hello\nworker 1 done\n"), (
            worker1.stderr
        )
        ps = await _run("logs", "lj", "--replica", "PS", "--kubeconfig", kc, "-n", "default")
        assert (ps.returncode, ps.stdout) == (0, "ps 0 says hello\nps 0 done\n"), ps.stderr
        # No --replica: the master-role replica, worker 0 in a job with no chief.
        default = await _run("logs", "lj", "--kubeconfig", kc)
        assert default.stdout == "worker 0 says hello\nworker 0 done\n", default.stderr
        sidecar = await _run("logs", "lj", "--replica", "worker-0", "-c", "sidecar", "--kubeconfig", kc)
        assert sidecar.stdout == "from the sidecar\n", sidecar.stderr
        tail = await _run("logs", "lj", "--replica", "worker-0", "--tail", "1", "--kubeconfig", kc)
        assert tail.stdout == "worker 0 done\n", tail.stderr

        missing = await _run("logs", "lj", "--replica", "worker-2", "--kubeconfig", kc)
        assert missing.returncode == 1
        assert "has no replica 'worker-2'; its replicas: ps-0, worker-0, worker-1" in missing.stderr
        unknown = await _run("logs", "nojob", "--kubeconfig", kc)
        assert unknown.returncode == 1 and 'tfjobs.kubeflow.org "nojob" not found' in unknown.stderr

        # -f streams a running replica until its container ends.
        script = "for i in 1 2 3; do echo line $i; sleep 0.3; done"
        await cluster.api.create(TFJOBS, _tfjob("fj"), "default")
        await cluster.api.create(PODS, _replica_pod("fj", "worker", 0, script))

        async def started() -> bool:
            return status_column(await get_pod(cluster.api, "fj-worker-0")) in ("Running", "Completed")

        await eventually(started, what="fj-worker-0 to start")
        followed = await _run("logs", "fj", "-f", "--kubeconfig", kc)
        assert (followed.returncode, followed.stdout) == (0, "line 1\nline 2\nline 3\n"), followed.stderr
