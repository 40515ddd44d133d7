"""Rules of a real container that the node agent keeps although it runs host processes, each
found different from the real kubelet by tests/realnode/test_sandbox_kubelet_agrees_with_kubelet.py:
a memory limit kills the container (``OOMKilled``, 137), SIGTERM does not reach a PID 1 without a
handler (the grace period runs out: 137), an eviction through the API marks the pod and deletes it
gracefully, a command that cannot start reads as containerd words it, and no ``signal`` is set."""

from __future__ import annotations

from typing import Any

import pytest

from kube.errors import ApiError
from kube.resources import PODS, Resource

from .harness import eventually, get_pod, pod_manifest, sandbox_cluster

PDBS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
GROW = "x=$(head -c 1048576 /dev/zero | tr '\\0' x); y=$x; while :; do y=$y$x; done"


def _terminated(pod: dict[str, Any]) -> dict[str, Any]:
    (container,) = pod["status"]["containerStatuses"]
    return dict(container["state"].get("terminated") or {})


async def test_a_memory_limit_exceeded_is_oom_killed() -> None:
    limits = {"resources": {"limits": {"memory": "32Mi"}}}
    async with sandbox_cluster(scheduler=False) as cluster:
        await cluster.api.create(
            PODS, pod_manifest("hog", GROW, restart_policy="Never", nodeName="las1", container=limits)
        )
        await cluster.api.create(
            PODS,
            pod_manifest("modest", "sleep 0.5", restart_policy="Never", nodeName="las1", container=limits),
        )

        async def ended() -> bool:
            phases = [(await get_pod(cluster.api, n))["status"].get("phase") for n in ("hog", "modest")]
            return phases == ["Failed", "Succeeded"]

        await eventually(ended, within=30, what="the hog killed, the modest one done")
        terminated = _terminated(await get_pod(cluster.api, "hog"))
        assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)
        assert "signal" not in terminated


async def test_sigterm_reaches_only_a_pid_1_that_handles_it() -> None:
    async with sandbox_cluster(scheduler=False) as cluster, cluster.watching(PODS) as pods:
        for name, command in (
            ("plain", ["sleep", "1000"]),
            ("trapping", ["sh", "-c", "trap 'exit 0' TERM; sleep 1000 & wait"]),
        ):
            body = pod_manifest(name, "", nodeName="las1", terminationGracePeriodSeconds=2)
            body["spec"]["containers"][0]["command"] = command
            await cluster.api.create(PODS, body)

        async def running() -> bool:
            pods_now = [await get_pod(cluster.api, n) for n in ("plain", "trapping")]
            return all(p["status"].get("phase") == "Running" for p in pods_now)

        await eventually(running, what="both running")
        await cluster.api.delete(PODS, "plain", "default")
        await cluster.api.delete(PODS, "trapping", "default")
        await eventually(lambda: {"plain", "trapping"} <= pods.deleted, within=10, what="both deleted")
        plain, trapping = pods.objects["plain"][-1], pods.objects["trapping"][-1]
        assert (_terminated(plain)["exitCode"], plain["status"]["phase"]) == (137, "Failed")
        assert (_terminated(trapping)["exitCode"], trapping["status"]["phase"]) == (0, "Succeeded")


async def test_an_eviction_marks_the_pod_and_deletes_it_unless_its_budget_forbids() -> None:
    async with sandbox_cluster(scheduler=False) as cluster, cluster.watching(PODS) as pods:
        script = "trap 'exit 143' TERM; sleep 1000 & wait"
        await cluster.api.create(PODS, pod_manifest("evicted", script, nodeName="las1"))
        protected = pod_manifest("protected", script, nodeName="las1")
        protected["metadata"]["labels"] = {"app": "kept"}
        await cluster.api.create(PODS, protected)
        await cluster.api.create(
            PDBS,
            {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
             "metadata": {"name": "kept", "namespace": "default"},
             "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "kept"}}}},
        )  # fmt: skip

        async def running() -> bool:
            phases = [
                (await get_pod(cluster.api, n))["status"].get("phase") for n in ("evicted", "protected")
            ]
            return phases == ["Running", "Running"]

        await eventually(running, what="both running")
        for name in ("evicted", "protected"):
            eviction = {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": name, "namespace": "default"},
            }
            if name == "protected":
                with pytest.raises(ApiError) as refused:
                    await cluster.api.create(PODS, eviction, subresource_of=name, subresource="eviction")
                assert refused.value.status == 429
            else:
                await cluster.api.create(PODS, eviction, subresource_of=name, subresource="eviction")
        await eventually(lambda: "evicted" in pods.deleted, within=10, what="the evicted pod gone")
        final = pods.objects["evicted"][-1]
        conditions = {c["type"]: c for c in final["status"]["conditions"]}
        assert (conditions["DisruptionTarget"]["reason"], final["status"]["phase"]) == (
            "EvictionByEvictionAPI",
            "Failed",
        )
        assert _terminated(final)["exitCode"] == 143
        assert (await get_pod(cluster.api, "protected"))["metadata"].get("deletionTimestamp") is None


async def test_a_command_not_found_is_a_start_error_in_containerd_words() -> None:
    async with sandbox_cluster(scheduler=False) as cluster, cluster.watching(PODS) as pods:
        for name, policy in (("missing", "Never"), ("retried", "Always")):
            body = pod_manifest(name, "", restart_policy=policy, nodeName="las1")
            body["spec"]["containers"][0]["command"] = ["no-such-command"]
            await cluster.api.create(PODS, body)

        async def settled() -> bool:
            failed = (await get_pod(cluster.api, "missing"))["status"].get("phase") == "Failed"
            (retried,) = (await get_pod(cluster.api, "retried"))["status"].get("containerStatuses") or [{}]
            return failed and retried.get("restartCount", 0) >= 1

        await eventually(settled, what="the first pod failed, the second retried")
        terminated = _terminated(await get_pod(cluster.api, "missing"))
        assert (terminated["reason"], terminated["exitCode"]) == ("StartError", 128)
        cause = 'exec: "no-such-command": executable file not found in $PATH'
        assert terminated["message"].endswith(f"error during container init: {cause}")
        # A start to be retried shows the kubelet's RunContainerError, never a bare termination.
        states = [
            (next(iter(c["state"])), c["restartCount"])
            for p in pods.objects["retried"]
            for c in (p.get("status") or {}).get("containerStatuses") or ()
        ]
        assert ("terminated", 0) not in states
        waiting = next(
            c for p in pods.objects["retried"] for c in (p.get("status") or {}).get("containerStatuses") or ()
            if (c["state"].get("waiting") or {}).get("reason") == "RunContainerError"
        )  # fmt: skip
        assert waiting["state"]["waiting"]["message"].endswith(cause)
        assert waiting["lastState"]["terminated"]["reason"] == "StartError"
