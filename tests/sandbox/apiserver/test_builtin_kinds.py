"""Built-in kinds: events in both API groups, priority classes, node and service tables."""

from __future__ import annotations

import datetime
import json

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.sandbox.apiserver.conftest import Kubectl


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_events_written_in_one_group_are_read_in_the_other(api_client: ApiClient) -> None:
    events = client.EventsV1Api(api_client)
    core = client.CoreV1Api(api_client)
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "tftest.1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "tfjob-controller",
        "reportingInstance": "tfjob-controller-0",
        "action": "Create",
        "reason": "SuccessfulCreatePod",
        "note": "Created pod: tftest-worker-0",
        "type": "Normal",
        "regarding": {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "name": "tftest",
            "namespace": "default",
        },
    }
    await events.create_namespaced_event("default", body)
    core_events = await core.list_namespaced_event("default", field_selector="involvedObject.name=tftest")
    assert [
        (e.reason, e.message, e.involved_object.kind, e.reporting_component) for e in core_events.items
    ] == [("SuccessfulCreatePod", "Created pod: tftest-worker-0", "TFJob", "tfjob-controller")]
    legacy = {
        "metadata": {"name": "tftest.2"},
        "involvedObject": {"kind": "TFJob", "name": "tftest"},
        "reason": "TFJobRunning",
        "message": "TFJob default/tftest is running.",
        "type": "Normal",
        "source": {"component": "tfjob-controller"},
        "count": 2,
        "firstTimestamp": now(),
        "lastTimestamp": now(),
        "eventTime": "2026-01-01T00:00:00.000000Z",
    }
    await core.create_namespaced_event("default", legacy)
    converted = await events.read_namespaced_event("tftest.2", "default")
    assert converted.note == "TFJob default/tftest is running."
    assert converted.regarding.name == "tftest" and converted.deprecated_count == 2
    await core.delete_collection_namespaced_event("default")


async def test_priority_classes_resolve_pod_priority(api_client: ApiClient) -> None:
    scheduling = client.SchedulingV1Api(api_client)
    core = client.CoreV1Api(api_client)
    await scheduling.create_priority_class({"metadata": {"name": "high"}, "value": 1000})
    pod = {
        "metadata": {"name": "important"},
        "spec": {"priorityClassName": "high", "containers": [{"name": "c", "image": "busybox"}]},
    }
    created = await core.create_namespaced_pod("default", pod)
    assert created.spec.priority == 1000 and created.spec.preemption_policy == "PreemptLowerPriority"
    pod["metadata"]["name"] = "unknown-class"
    pod["spec"]["priorityClassName"] = "missing"
    with pytest.raises(ApiException) as forbidden:
        await core.create_namespaced_pod("default", pod)
    assert forbidden.value.status == 403
    assert json.loads(forbidden.value.body)["message"] == (
        'pods "unknown-class" is forbidden: no PriorityClass with name missing was found'
    )
    system = await scheduling.read_priority_class("system-node-critical")
    assert system.value == 2000001000
    await core.delete_namespaced_pod("important", "default")
    await scheduling.delete_priority_class("high")


def test_node_and_service_tables(kubectl: Kubectl) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "las1", "labels": {"node-role.kubernetes.io/worker": ""}},
    }
    kubectl.run("create", "-f", "-", stdin=json.dumps(node))
    status = {
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": now()}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
            "nodeInfo": {
                "kubeletVersion": "v1.37.1",
                "osImage": "Sandbox",
                "kernelVersion": "6.1",
                "containerRuntimeVersion": "sandbox://1",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        }
    }
    kubectl.run("patch", "node", "las1", "--subresource=status", "--type=merge", "-p", json.dumps(status))
    nodes = kubectl.run("get", "nodes", "-o", "wide").stdout.splitlines()
    assert nodes[0].split() == [
        "NAME",
        "STATUS",
        "ROLES",
        "AGE",
        "VERSION",
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ]
    cells = nodes[1].split()
    assert cells[:3] == ["las1", "Ready", "worker"] and cells[4:] == [
        "v1.37.1",
        "10.0.0.1",
        "<none>",
        "Sandbox",
        "6.1",
        "sandbox://1",
    ]
    kubectl.run("delete", "node", "las1")
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "tftest-worker-0"},
        "spec": {
            "clusterIP": "None",
            "selector": {"training.kubeflow.org/replica-index": "0"},
            "ports": [{"name": "tfjob-port", "port": 2222}],
        },
    }
    kubectl.run("create", "-f", "-", stdin=json.dumps(service))
    services = kubectl.run("get", "svc", "tftest-worker-0", "-o", "wide").stdout.splitlines()
    assert services[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    row = services[1].split()
    assert row[:5] == ["tftest-worker-0", "ClusterIP", "None", "<none>", "2222/TCP"]
    assert row[6] == "training.kubeflow.org/replica-index=0"
    kubectl.run("delete", "svc", "tftest-worker-0")


def test_events_k8s_io_events_print_with_the_event_columns(kubectl: Kubectl) -> None:
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "printed.1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "volcano",
        "reportingInstance": "volcano-0",
        "action": "Schedule",
        "reason": "Scheduled",
        "type": "Normal",
        "note": "pod group is ready",
        "regarding": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "name": "tftest"},
    }
    kubectl.run("create", "-f", "-", stdin=json.dumps(event))
    lines = kubectl.run("get", "events.v1.events.k8s.io", "printed.1").stdout.splitlines()
    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert lines[1].split()[1:] == ["Normal", "Scheduled", "podgroup/tftest", "pod", "group", "is", "ready"]
    kubectl.run("delete", "events.v1.events.k8s.io", "printed.1")
