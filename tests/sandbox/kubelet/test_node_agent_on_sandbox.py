"""The node agent against the sandbox API server: real processes, real watches, real kubectl."""

from __future__ import annotations

import json

from kube.resources import EVENTS, LEASES, NODES, PODS

from .harness import eventually, get_pod, pod_manifest, restarts, sandbox_cluster, status_column


async def test_node_is_registered_ready_with_capacity_and_a_log_endpoint() -> None:
    async with sandbox_cluster("las1:cpu=4,memory=8Gi;las2", scheduler=False) as cluster:
        node = await cluster.api.get(NODES, "las1")
        status = node["status"]
        assert status["capacity"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}
        assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
        assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] == cluster.agent.log_port  # type: ignore[union-attr]
        assert {"type": "InternalIP", "address": "127.0.0.1"} in status["addresses"]
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "las1"
        assert (await cluster.api.get(NODES, "las2"))["status"]["allocatable"]["cpu"] == "8"
        lease = await cluster.api.get(LEASES, "las1", "kube-node-lease")
        assert lease["spec"]["holderIdentity"] == "las1"


async def test_a_crashing_pod_goes_through_error_and_crash_loop_back_off_and_its_logs_are_served() -> None:
    async with sandbox_cluster() as cluster, cluster.watching(PODS) as pods:
        await cluster.api.create(
            PODS, pod_manifest("crash", "echo hello from $HOSTNAME; exit 1", restart_policy="OnFailure")
        )

        async def restarted_twice() -> bool:
            return restarts(await get_pod(cluster.api, "crash")) >= 2

        await eventually(restarted_twice, what="two restarts")
        sequence = pods.distinct("crash", lambda p: (status_column(p), restarts(p)))
        assert sequence[:8] == [
            ("Pending", 0),
            ("ContainerCreating", 0),
            ("Running", 0),
            ("Error", 0),
            ("Running", 1),
            ("Error", 1),
            ("CrashLoopBackOff", 1),
            ("Running", 2),
        ]
        crash_loop = next(p for p in pods.objects["crash"] if status_column(p) == "CrashLoopBackOff")
        (container,) = crash_loop["status"]["containerStatuses"]
        uid = crash_loop["metadata"]["uid"]
        assert container["state"]["waiting"]["message"] == (
            f"back-off 300ms restarting failed container=main pod=crash_default({uid})"
        )
        assert container["lastState"]["terminated"]["exitCode"] == 1
        assert crash_loop["status"]["phase"] == "Running"

        async def events_written() -> bool:
            events, _ = await cluster.api.list_all(EVENTS, "default")
            return {"Scheduled", "Started", "BackOff"} <= {e["reason"] for e in events}

        await eventually(events_written, what="the scheduler's and kubelet's events")
        events, _ = await cluster.api.list_all(EVENTS, "default")
        scheduled = next(e for e in events if e["reason"] == "Scheduled")
        assert (scheduled["source"]["component"], scheduled["message"]) == (
            "default-scheduler",
            "Successfully assigned default/crash to las1",
        )
        started = next(e for e in events if e["reason"] == "Started")
        assert (started["source"], started["message"]) == (
            {"component": "kubelet", "host": "las1"},
            "Started container main",
        )

        # The current instance may have been started a moment ago and not printed yet.
        await eventually(_logged(cluster, "crash", "hello from crash\n"), what="the current output")
        code, output = await cluster.kubectl("logs", "crash", "--previous")
        assert (code, output) == (0, "hello from crash\n")


async def test_restart_policies_decide_the_final_phase() -> None:
    async with sandbox_cluster() as cluster:
        await cluster.api.create(PODS, pod_manifest("never", "exit 3", restart_policy="Never"))
        await cluster.api.create(PODS, pod_manifest("done", "exit 0", restart_policy="OnFailure"))
        await cluster.api.create(PODS, pod_manifest("always", "exit 0", restart_policy="Always"))

        async def settled() -> bool:
            phases = [(await get_pod(cluster.api, n))["status"].get("phase") for n in ("never", "done")]
            return phases == ["Failed", "Succeeded"] and restarts(await get_pod(cluster.api, "always")) >= 1

        await eventually(settled, what="the pods to settle")
        never = await get_pod(cluster.api, "never")
        (container,) = never["status"]["containerStatuses"]
        assert container["state"]["terminated"]["exitCode"] == 3
        assert container["state"]["terminated"]["reason"] == "Error"
        assert container["restartCount"] == 0
        done = await get_pod(cluster.api, "done")
        assert done["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
        assert {c["type"]: c.get("reason") for c in done["status"]["conditions"]}["Ready"] == "PodCompleted"
        always = await get_pod(cluster.api, "always")
        assert always["status"]["phase"] == "Running"


async def test_the_environment_reaches_the_process() -> None:
    tf_config = (
        '{"cluster":{"ps":["t-ps-0.default.svc:2222"]},"task":{"type":"ps","index":0},"environment":"cloud"}'
    )
    env = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        {"name": "TF_CONFIG", "value": tf_config},
    ]
    script = (
        'printf "%s|%s|%s|%s|%s|%s\\n" '
        '"$POD_NAME" "$POD_NAMESPACE" "$NODE_NAME" "$POD_IP" "$HOST_IP" "$TF_CONFIG"'
    )
    async with sandbox_cluster() as cluster:
        await cluster.api.create(
            PODS, pod_manifest("envy", script, restart_policy="Never", container={"env": env})
        )

        async def finished() -> bool:
            return (await get_pod(cluster.api, "envy"))["status"].get("phase") == "Succeeded"

        await eventually(finished, what="the pod to finish")
        pod = await get_pod(cluster.api, "envy")
        code, output = await cluster.kubectl("logs", "envy")
        assert code == 0
        assert output.rstrip("\n").split("|") == [
            "envy",
            "default",
            "las1",
            pod["status"]["podIP"],
            "127.0.0.1",
            tf_config,
        ]
        assert pod["status"]["podIP"].startswith("10.244.")
        json.loads(output.rstrip("\n").split("|")[-1])

        await cluster.api.create(
            PODS,
            pod_manifest("hosted", script, restart_policy="Never", hostNetwork=True, container={"env": env}),
        )

        async def hosted_finished() -> bool:
            return (await get_pod(cluster.api, "hosted"))["status"].get("phase") == "Succeeded"

        await eventually(hosted_finished, what="the host-network pod to finish")
        assert (await get_pod(cluster.api, "hosted"))["status"]["podIP"] == "127.0.0.1"


async def test_deletion_is_graceful_then_final() -> None:
    script = "trap 'echo terminating; exit 0' TERM; echo up; sleep 1000 & wait"
    async with sandbox_cluster() as cluster, cluster.watching(PODS) as pods:
        await cluster.api.create(PODS, pod_manifest("graceful", script))
        await cluster.api.create(
            PODS, pod_manifest("stubborn", "trap '' TERM; sleep 1000 & wait", terminationGracePeriodSeconds=1)
        )

        async def running() -> bool:
            columns = [status_column(await get_pod(cluster.api, name)) for name in ("graceful", "stubborn")]
            return columns == ["Running", "Running"]

        await eventually(running, what="both pods running")
        await eventually(_logged(cluster, "graceful", "up\n"), what="the first output")
        await cluster.api.delete(PODS, "graceful", "default")
        await cluster.api.delete(PODS, "stubborn", "default")

        async def gone() -> bool:
            return {"graceful", "stubborn"} <= pods.deleted

        await eventually(gone, within=10, what="both pods deleted")  # far less than the default 30 s grace
        graceful = pods.distinct("graceful", status_column)
        assert graceful[-2:] == ["Terminating", "Completed"]
        final = pods.objects["graceful"][-1]
        assert final["status"]["phase"] == "Succeeded"
        stubborn = pods.objects["stubborn"][-1]
        terminated = stubborn["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (terminated["exitCode"], stubborn["status"]["phase"]) == (137, "Failed")


def _logged(cluster, name: str, expected: str):  # type: ignore[no-untyped-def]
    async def check() -> bool:
        code, output = await cluster.kubectl("logs", name)
        return code == 0 and output == expected

    return check


async def test_kubectl_logs_follow_streams_until_the_container_ends() -> None:
    script = "for i in 1 2 3; do echo line $i; sleep 0.3; done"
    async with sandbox_cluster() as cluster:
        await cluster.api.create(PODS, pod_manifest("talker", script, restart_policy="Never"))

        async def started() -> bool:
            return status_column(await get_pod(cluster.api, "talker")) in ("Running", "Completed")

        await eventually(started, what="the pod to start")
        code, output = await cluster.kubectl("logs", "-f", "talker")
        assert (code, output) == (0, "line 1\nline 2\nline 3\n")
        code, output = await cluster.kubectl("logs", "--tail=1", "talker")
        assert (code, output) == (0, "line 3\n")


async def test_a_restarted_agent_adopts_its_pods_and_counts_a_restart() -> None:
    async with sandbox_cluster(scheduler=True) as cluster:
        await cluster.api.create(PODS, pod_manifest("survivor", "sleep 1000"))

        async def running_with(count: int) -> bool:
            pod = await get_pod(cluster.api, "survivor")
            return status_column(pod) == "Running" and restarts(pod) == count

        await eventually(lambda: running_with(0), what="the first run")
        assert cluster.agent is not None
        await cluster.restart_agent()
        await eventually(lambda: running_with(1), what="the run under the new agent")


async def test_init_containers_run_first_one_by_one() -> None:
    marker = "init-was-here"
    async with sandbox_cluster() as cluster, cluster.watching(PODS) as pods:
        body = pod_manifest("staged", "cat $HOME/ready; sleep 100", restart_policy="OnFailure")
        body["spec"]["initContainers"] = [
            {"name": "first", "image": "busybox", "command": ["sh", "-c", "sleep 0.2; echo step1"]},
            {"name": "second", "image": "busybox", "command": ["sh", "-c", f"echo {marker} > $HOME/ready"]},
        ]
        await cluster.api.create(PODS, body)
        failing = pod_manifest("blocked", "echo never", restart_policy="Never")
        failing["spec"]["initContainers"] = [
            {"name": "setup", "image": "busybox", "command": ["sh", "-c", "exit 2"]}
        ]
        await cluster.api.create(PODS, failing)

        async def settled() -> bool:
            staged = await get_pod(cluster.api, "staged")
            blocked = await get_pod(cluster.api, "blocked")
            return status_column(staged) == "Running" and blocked["status"].get("phase") == "Failed"

        await eventually(settled, what="the init containers to finish")
        assert pods.distinct("staged", status_column)[:4] == ["Pending", "Init:0/2", "Init:1/2", "Running"]
        await eventually(_logged(cluster, "staged", f"{marker}\n"), what="the app to read the init output")
        code, output = await cluster.kubectl("logs", "staged", "-c", "first")
        assert (code, output) == (0, "step1\n")
        blocked = await get_pod(cluster.api, "blocked")
        assert status_column(blocked) == "Init:Error"
        assert blocked["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"
        initialized = {c["type"]: c for c in blocked["status"]["conditions"]}["Initialized"]
        assert (initialized["status"], initialized["reason"]) == ("False", "ContainersNotInitialized")
