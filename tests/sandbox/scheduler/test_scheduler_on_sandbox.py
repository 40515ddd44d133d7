"""The gang scheduler against the sandbox API server, with the node agent running the pods."""

from __future__ import annotations

from typing import Any

from kube.resources import EVENTS, PODGROUPS_V1BETA1, PODS, QUEUES_V1BETA1

from ..kubelet.harness import eventually, get_pod, pod_manifest, sandbox_cluster, status_column


def podgroup(name: str, min_member: int, min_resources: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": "default"}
    if min_resources:
        spec["minResources"] = min_resources
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def member(group: str, index: int, script: str = "sleep 3", cpu: str = "1") -> dict[str, Any]:
    pod = pod_manifest(
        f"{group}-{index}",
        script,
        restart_policy="OnFailure",
        schedulerName="volcano",
        container={"resources": {"limits": {"cpu": cpu, "memory": "100Mi"}}},
    )
    pod["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": group, "volcano.sh/task-spec": "worker"}
    return pod


def phase(group: dict[str, Any]) -> tuple[str, int]:
    status = group.get("status") or {}
    return (str(status.get("phase") or ""), int(status.get("running") or 0))


async def test_the_default_queue_is_created_and_opened() -> None:
    async with sandbox_cluster(kubelet=False) as cluster:

        async def opened() -> bool:
            queue = await cluster.api.get(QUEUES_V1BETA1, "default")
            return (queue.get("status") or {}).get("state") == "Open"

        await eventually(opened, what="the default queue to open")


async def test_a_gang_waits_for_all_its_members_then_is_bound_at_once_and_runs() -> None:
    async with sandbox_cluster() as cluster, cluster.watching(PODGROUPS_V1BETA1) as groups:
        await cluster.api.create(PODGROUPS_V1BETA1, podgroup("tftest", 4, {"cpu": "4", "memory": "400Mi"}))

        async def inqueue() -> bool:
            return phase(await cluster.api.get(PODGROUPS_V1BETA1, "tftest", "default"))[0] == "Inqueue"

        await eventually(inqueue, what="the PodGroup to be admitted")
        for index in range(3):
            await cluster.api.create(PODS, member("tftest", index))

        async def unschedulable() -> bool:
            status = (await cluster.api.get(PODGROUPS_V1BETA1, "tftest", "default")).get("status") or {}
            return any(c.get("type") == "Unschedulable" for c in status.get("conditions") or [])

        await eventually(unschedulable, what="the Unschedulable condition for the incomplete gang")
        assert [(await get_pod(cluster.api, f"tftest-{i}"))["spec"].get("nodeName") for i in range(3)] == [
            None
        ] * 3

        await cluster.api.create(PODS, member("tftest", 3))

        async def all_running() -> bool:
            return phase(await cluster.api.get(PODGROUPS_V1BETA1, "tftest", "default")) == ("Running", 4)

        await eventually(all_running, what="four running members")
        nodes = {(await get_pod(cluster.api, f"tftest-{i}"))["spec"]["nodeName"] for i in range(4)}
        assert nodes == {"las1"}
        assert groups.distinct("tftest", lambda g: phase(g)[0])[:3] == ["", "Inqueue", "Running"]
        final = await cluster.api.get(PODGROUPS_V1BETA1, "tftest", "default")
        scheduled = [c for c in final["status"]["conditions"] if c["type"] == "Scheduled"]
        assert scheduled[0]["reason"] == "tasks in gang are ready to be scheduled"


async def _scheduled_messages(api: Any, prefix: str, count: int) -> list[str]:
    pods = [await get_pod(api, f"{prefix}-{i}") for i in range(count)]
    return [
        str(c.get("message") or "")
        for pod in pods
        for c in pod["status"].get("conditions") or []
        if c.get("type") == "PodScheduled"
    ]


async def test_room_for_three_of_four_binds_none_and_tells_why() -> None:
    async with sandbox_cluster("las1:cpu=3,memory=8Gi") as cluster:
        await cluster.api.create(PODGROUPS_V1BETA1, podgroup("big", 4))
        for index in range(4):
            await cluster.api.create(PODS, member("big", index))

        async def explained() -> bool:
            # Sessions may have seen fewer members first; wait for the verdict on all four.
            events, _ = await cluster.api.list_all(EVENTS, "default")
            status = (await cluster.api.get(PODGROUPS_V1BETA1, "big", "default")).get("status") or {}
            messages = [c.get("message", "") for c in status.get("conditions") or []]
            failed = any(e.get("reason") == "FailedScheduling" for e in events)
            told = "Insufficient cpu" in str(await _scheduled_messages(cluster.api, "big", 4))
            return failed and told and any(m.startswith("1/4 tasks in gang unschedulable") for m in messages)

        await eventually(explained, what="the gang's verdict and FailedScheduling events")
        group = await cluster.api.get(PODGROUPS_V1BETA1, "big", "default")
        (condition,) = [c for c in group["status"]["conditions"] if c["type"] == "Unschedulable"]
        assert condition["reason"] == "NotEnoughResources"
        # Volcano counts the three it could place: one more would have made minMember.
        assert condition["message"].startswith(
            "1/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; "
            "Pending: 1 Unschedulable, 3 Schedulable. Origin reason is big-"
        )
        assert group["status"]["phase"] == "Inqueue"
        pods = [await get_pod(cluster.api, f"big-{i}") for i in range(4)]
        assert [p["spec"].get("nodeName") for p in pods] == [None] * 4
        assert {status_column(p) for p in pods} == {"Pending"}
        # Volcano tries pods of one creation second by uid: which one is left over varies.
        scheduled = [
            {c["type"]: c for c in p["status"].get("conditions") or []}["PodScheduled"] for p in pods
        ]
        assert sorted((c["status"], c["reason"]) for c in scheduled) == [
            ("False", "Schedulable"),
            ("False", "Schedulable"),
            ("False", "Schedulable"),
            ("False", "Unschedulable"),
        ]
        (unschedulable,) = [c for c in scheduled if c["reason"] == "Unschedulable"]
        assert unschedulable["message"] == "0/1 nodes are unavailable: 1 Insufficient cpu."


async def test_a_plain_pod_that_fits_no_node_gets_failed_scheduling_and_a_fitting_one_runs() -> None:
    async with sandbox_cluster() as cluster:
        huge = pod_manifest("huge", "sleep 1", container={"resources": {"requests": {"cpu": "100"}}})
        await cluster.api.create(PODS, huge)
        await cluster.api.create(PODS, pod_manifest("small", "sleep 100"))

        async def outcome() -> bool:
            events, _ = await cluster.api.list_all(EVENTS, "default")
            failed = [e for e in events if e.get("reason") == "FailedScheduling"]
            small = await get_pod(cluster.api, "small")
            return bool(failed) and status_column(small) == "Running"

        await eventually(outcome, what="the two outcomes")
        events, _ = await cluster.api.list_all(EVENTS, "default")
        (event,) = [e for e in events if e.get("reason") == "FailedScheduling"]
        assert event["involvedObject"]["name"] == "huge"
        assert event["type"] == "Warning"
        assert event["message"] == "0/1 nodes are available: 1 Insufficient cpu."
        code, output = await cluster.kubectl("describe", "pod", "huge")
        assert code == 0
        assert "FailedScheduling" in output


async def test_a_volcano_pod_without_a_podgroup_gets_one_and_runs() -> None:
    async with sandbox_cluster() as cluster:
        loose = pod_manifest("loose", "sleep 100", schedulerName="volcano")
        created = await cluster.api.create(PODS, loose)

        async def running() -> bool:
            return status_column(await get_pod(cluster.api, "loose")) == "Running"

        await eventually(running, what="the loose pod to run")
        name = f"podgroup-{created['metadata']['uid']}"
        pod = await get_pod(cluster.api, "loose")
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == name
        group = await cluster.api.get(PODGROUPS_V1BETA1, name, "default")
        assert group["spec"]["minMember"] == 1
        assert group["status"]["phase"] == "Running"


async def test_without_volcano_crds_plain_pods_are_still_scheduled() -> None:
    async with sandbox_cluster(volcano_crds=False) as cluster:
        await cluster.api.create(PODS, pod_manifest("plain", "sleep 100"))

        async def running() -> bool:
            return status_column(await get_pod(cluster.api, "plain")) == "Running"

        await eventually(running, what="the plain pod to run without Volcano's CRDs")
