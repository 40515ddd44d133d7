"""Smaller kube-apiserver behaviours: discovery, generation, node agent liveness, initial events, logs."""

from __future__ import annotations

import datetime
import json
import socket
import ssl

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from sandbox.apiserver.state import ApiState
from sandbox.testing import ApiServerHandle
from tests.sandbox.apiserver.conftest import Kubectl, raw_request


def stamp(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_discovery_lists_builtin_and_crd_resources(api: ApiServerHandle) -> None:
    code, groups, _ = await raw_request(api, "GET", "/apis")
    assert code == 200
    names = [group["name"] for group in groups["groups"]]
    assert {"scheduling.volcano.sh", "kubeflow.org", "coordination.k8s.io", "events.k8s.io"} <= set(names)
    code, core, _ = await raw_request(api, "GET", "/api/v1")
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods["shortNames"] == ["po"] and pods["namespaced"] is True and "watch" in pods["verbs"]
    assert {"pods/status", "pods/binding", "pods/log"} <= {r["name"] for r in core["resources"]}
    code, volcano, _ = await raw_request(api, "GET", "/apis/scheduling.volcano.sh/v1beta1")
    podgroups = next(r for r in volcano["resources"] if r["name"] == "podgroups")
    assert podgroups["shortNames"] == ["pg", "podgroup-v1beta1"]
    assert "podgroups/status" not in {r["name"] for r in volcano["resources"]}
    queues = next(r for r in volcano["resources"] if r["name"] == "queues")
    assert queues["namespaced"] is False
    code, aggregated, headers = await raw_request(
        api, "GET", "/apis", accept="application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    )
    assert headers["Content-Type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2")
    assert aggregated["kind"] == "APIGroupDiscoveryList"
    code, version, _ = await raw_request(api, "GET", "/version", token="")
    assert code == 200 and version["major"] == "1"
    code, missing, _ = await raw_request(api, "GET", "/apis/nothing.example.com/v1/things")
    assert code == 404 and missing["reason"] == "NotFound"


async def test_generation_is_kept_only_where_kube_keeps_it(api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    configmap = await core.create_namespaced_config_map("default", {"metadata": {"name": "no-generation"}})
    assert configmap.metadata.generation is None
    pod = await core.create_namespaced_pod(
        "default",
        {"metadata": {"name": "generation"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    )
    assert pod.metadata.generation == 1
    labelled = await core.patch_namespaced_pod("generation", "default", {"metadata": {"labels": {"a": "b"}}})
    assert labelled.metadata.generation == 1, "metadata changes do not bump generation"
    await core.delete_namespaced_pod("generation", "default")
    await core.delete_namespaced_config_map("no-generation", "default")


def test_node_agent_liveness_from_heartbeat_or_lease() -> None:
    state = ApiState.create()
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    state.clock = lambda: now
    ready = {
        "type": "Ready",
        "status": "True",
        "lastHeartbeatTime": stamp(now - datetime.timedelta(minutes=5)),
    }
    node = {"metadata": {"name": "las1"}, "status": {"conditions": [ready]}}
    state.storage.put(state.registry.lookup("", "v1", "nodes").storage_key, node, "ADDED")  # type: ignore[union-attr]
    assert not state.node_agent_serves("las1"), "a stale heartbeat means no agent"
    lease = {
        "metadata": {"name": "las1", "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": "las1", "renewTime": "2025-12-31T23:59:50.000000Z"},
    }
    leases = state.registry.lookup("coordination.k8s.io", "v1", "leases")
    assert leases is not None
    state.storage.put(leases.storage_key, lease, "ADDED")
    assert state.node_agent_serves("las1"), "a fresh node lease counts as the heartbeat"
    assert not state.node_agent_serves("other")


async def test_send_initial_events_ends_with_the_marked_bookmark(
    api: ApiServerHandle, api_client: ApiClient
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_config_map("default", {"metadata": {"name": "initial"}})
    context = ssl.create_default_context(cadata=api.ca_pem.decode())
    query = "watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
    events = []
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{api.url}/api/v1/namespaces/default/configmaps?{query}&timeoutSeconds=5",
            headers={"Authorization": f"Bearer {api.token}"},
            ssl=context,
        ) as response,
    ):
        async for line in response.content:
            events.append(json.loads(line))
            if events[-1]["type"] == "BOOKMARK":
                break
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[0]["object"]["metadata"]["name"] == "initial"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    await core.delete_namespaced_config_map("initial", "default")


def test_logs_of_an_unscheduled_pod_are_empty(kubectl: Kubectl) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "unscheduled"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    kubectl.run("create", "-f", "-", stdin=json.dumps(pod))
    logs = kubectl.run("logs", "unscheduled")
    assert logs.stdout == ""
    kubectl.run("delete", "pod", "unscheduled")


async def test_services_get_cluster_ips_and_headless_stays_headless(api_client: ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    normal = await core.create_namespaced_service(
        "default",
        {"metadata": {"name": "normal"}, "spec": {"ports": [{"port": 2222}], "selector": {"a": "b"}}},
    )
    assert normal.spec.cluster_ip.startswith("10.") and normal.spec.cluster_ips == [normal.spec.cluster_ip]
    assert normal.spec.ports[0].target_port == 2222 and normal.spec.ports[0].protocol == "TCP"
    headless = await core.create_namespaced_service(
        "default",
        {"metadata": {"name": "headless"}, "spec": {"clusterIP": "None", "ports": [{"port": 2222}]}},
    )
    assert headless.spec.cluster_ip == "None" and headless.spec.type == "ClusterIP"
    for name in ("normal", "headless"):
        await core.delete_namespaced_service(name, "default")


def test_deleting_a_crd_removes_its_objects_and_resource(kubectl: Kubectl) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
    kubectl.run("apply", "-f", "-", stdin=json.dumps(crd))
    kubectl.run(
        "apply",
        "-f",
        "-",
        stdin=json.dumps(
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "size": 3}
        ),
    )
    assert kubectl.run("get", "widgets", "-o", "name").stdout.split() == ["widget.example.com/w"]
    kubectl.run("delete", "crd", "widgets.example.com")
    gone = kubectl.run("get", "widgets", check=False)
    assert gone.returncode != 0
    # kubectl still knows the resource from its discovery cache; the server no longer serves it
    assert "the server could not find the requested resource" in gone.stderr


async def test_request_log_over_http(api: ApiServerHandle) -> None:
    code, _body, _ = await raw_request(api, "DELETE", "/sandbox/requests")
    assert code == 200
    await raw_request(api, "GET", "/api/v1/namespaces/kube-system/configmaps/absent")
    code, records, _ = await raw_request(api, "GET", "/sandbox/requests")
    assert code == 200
    assert records == [
        {
            "verb": "get",
            "group": "",
            "version": "v1",
            "resource": "configmaps",
            "subresource": "",
            "namespace": "kube-system",
            "name": "absent",
            "user": "sandbox-admin",
            "code": 404,
            "form": "",
        }
    ]
    code, _body, _ = await raw_request(api, "GET", "/sandbox/requests", token="wrong")
    assert code == 401


def test_logs_when_no_node_agent_answers(kubectl: Kubectl) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "silent-node"}}
    kubectl.run("create", "-f", "-", stdin=json.dumps(node))
    kubectl.run(
        "patch",
        "node",
        "silent-node",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}}),
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "on-silent-node"},
        "spec": {"nodeName": "silent-node", "containers": [{"name": "c", "image": "busybox"}]},
    }
    kubectl.run("create", "-f", "-", stdin=json.dumps(pod))
    logs = kubectl.run("logs", "on-silent-node", check=False)
    assert logs.returncode != 0
    assert logs.stderr.strip() == (
        f'Error from server: Get "https://127.0.0.1:{port}/containerLogs/default/on-silent-node/c": '
        f"dial tcp 127.0.0.1:{port}: connect: connection refused"
    )
    kubectl.run("delete", "pod", "on-silent-node")
    kubectl.run("delete", "node", "silent-node")
