"""What kubectl prints against the sandbox: pod tables, watches, describe, events, PodGroups, delete."""

from __future__ import annotations

import datetime
import json
import queue
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from sandbox.testing import ApiServerHandle
from tests.sandbox.apiserver.conftest import Kubectl

TF_CONFIG = (
    '{"cluster":{"ps":["tftest-ps-0.default.svc:2222"],"worker":["tftest-worker-0.default.svc:2222",'
    '"tftest-worker-1.default.svc:2222","tftest-worker-2.default.svc:2222"]},"task":{"type":"ps","index":0},'
    '"environment":"cloud"}'
)


@pytest.fixture(autouse=True)
def no_pods_left(kubectl: Kubectl) -> Iterator[None]:
    yield
    kubectl.run("delete", "pods", "--all", "--wait=false")


def stamp(seconds_ago: float = 0) -> str:
    moment = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds_ago)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def create_pod(kubectl: Kubectl, name: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"training.kubeflow.org/job-name": "tftest"}},
        "spec": {
            "containers": [
                {
                    "name": "tensorflow",
                    "image": "busybox:1.37.0-glibc",
                    "env": [{"name": "TF_CONFIG", "value": TF_CONFIG}],
                    "resources": {"limits": {"cpu": "1", "memory": "100Mi"}},
                }
            ]
        },
    }
    kubectl.run("create", "-f", "-", stdin=json.dumps(pod))


def bind(kubectl: Kubectl, name: str, node: str) -> None:
    patch = {"spec": {"nodeName": node}}
    refused = kubectl.run("patch", "pod", name, "-p", json.dumps(patch), check=False)
    assert refused.returncode != 0, "pod spec.nodeName is immutable except through pods/binding"
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    kubectl.run(
        "create",
        "--raw",
        f"/api/v1/namespaces/default/pods/{name}/binding",
        "-f",
        "-",
        stdin=json.dumps(binding),
    )


def write_status(kubectl: Kubectl, name: str, status: dict[str, Any]) -> None:
    kubectl.run(
        "patch", "pod", name, "--subresource=status", "--type=merge", "-p", json.dumps({"status": status})
    )


def running(ip: str, restarts: int = 0, finished_ago: float | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "tensorflow",
        "ready": True,
        "restartCount": restarts,
        "started": True,
        "image": "busybox:1.37.0-glibc",
        "imageID": "",
        "containerID": "sandbox://1",
        "state": {"running": {"startedAt": stamp()}},
    }
    if finished_ago is not None:
        container["lastState"] = {
            "terminated": {
                "exitCode": 1,
                "reason": "Error",
                "finishedAt": stamp(finished_ago),
                "startedAt": stamp(finished_ago + 10),
            }
        }
    return {
        "phase": "Running",
        "podIP": ip,
        "hostIP": "10.0.0.1",
        "containerStatuses": [container],
        "conditions": [{"type": "Ready", "status": "True"}],
    }


def columns(output: str) -> list[dict[str, str]]:
    """Rows keyed by header, cut where header cells start (kubectl aligns cells under their headers)."""
    lines = output.rstrip().splitlines()
    header = lines[0]
    starts = [i for i, char in enumerate(header) if char != " " and (i == 0 or header[i - 2 : i] == "  ")]
    ends: list[int | None] = [*starts[1:], None]
    names = [header[a:b].strip() for a, b in zip(starts, ends, strict=True)]
    return [
        {name: line[a:b].strip() for name, a, b in zip(names, starts, ends, strict=True)}
        for line in lines[1:]
    ]


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines()]


def test_pod_tables_match_the_seed_rows(kubectl: Kubectl) -> None:
    for name in ("tftest-ps-0", "tftest-worker-0", "tftest-worker-1"):
        create_pod(kubectl, name)
    bind(kubectl, "tftest-worker-0", "las1")
    bind(kubectl, "tftest-worker-1", "las1")
    write_status(
        kubectl,
        "tftest-worker-0",
        {
            "containerStatuses": [
                {
                    "name": "tensorflow",
                    "ready": False,
                    "restartCount": 0,
                    "image": "busybox:1.37.0-glibc",
                    "imageID": "",
                    "state": {"waiting": {"reason": "ContainerCreating"}},
                }
            ]
        },
    )
    write_status(kubectl, "tftest-worker-1", running("192.168.221.181", restarts=1, finished_ago=3))
    output = kubectl.run("get", "po", "-o", "wide").stdout
    assert rows(output)[0] == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    by_name = {row["NAME"]: row for row in columns(output)}
    wanted = ("READY", "STATUS", "RESTARTS", "IP", "NODE", "NOMINATED NODE", "READINESS GATES")
    shown = {name: " ".join(row[column] for column in wanted) for name, row in by_name.items()}
    # the seed transcript's rows, without AGE
    assert shown["tftest-ps-0"] == "0/1 Pending 0 <none> <none> <none> <none>"
    assert shown["tftest-worker-0"] == "0/1 ContainerCreating 0 <none> las1 <none> <none>"
    restarted = re.fullmatch(
        r"1/1 Running 1 \((\d+)s ago\) 192\.168\.221\.181 las1 <none> <none>", shown["tftest-worker-1"]
    )
    assert restarted is not None, shown["tftest-worker-1"]
    assert 3 <= int(restarted.group(1)) <= 15
    assert re.fullmatch(r"\d+s", by_name["tftest-ps-0"]["AGE"])
    narrow = rows(kubectl.run("get", "po").stdout)
    assert narrow[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    kubectl.run("delete", "pods", "--all")


def test_describe_pod_shows_the_environment(kubectl: Kubectl) -> None:
    create_pod(kubectl, "tftest-ps-0")
    described = kubectl.run("describe", "po", "tftest-ps-0").stdout
    assert f"TF_CONFIG:  {TF_CONFIG}" in described
    assert (
        "QoS Class:                   Guaranteed" in described or "QoS Class:        Guaranteed" in described
    )
    kubectl.run("delete", "po", "tftest-ps-0", "--wait=false")


def test_get_events_and_describe_lists_them(kubectl: Kubectl) -> None:
    create_pod(kubectl, "evented")
    uid = json.loads(kubectl.run("get", "po", "evented", "-o", "json").stdout)["metadata"]["uid"]
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "evented.1", "namespace": "default"},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "evented",
            "namespace": "default",
            "uid": uid,
        },
        "reason": "FailedScheduling",
        "type": "Warning",
        "source": {"component": "volcano"},
        "message": "0/1 nodes are unavailable",
        "firstTimestamp": stamp(5),
        "lastTimestamp": stamp(5),
        "count": 3,
    }
    kubectl.run("create", "-f", "-", stdin=json.dumps(event))
    table = rows(kubectl.run("get", "events").stdout)
    assert table[0] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert table[1][1:5] == ["Warning", "FailedScheduling", "pod/evented", "0/1"]
    described = kubectl.run("describe", "po", "evented").stdout
    assert "Warning  FailedScheduling" in described and "(x3 over" in described
    kubectl.run("delete", "po", "evented")


def test_watch_prints_rows_as_pods_change(kubectl: Kubectl) -> None:
    create_pod(kubectl, "watched")
    watcher = kubectl.popen("get", "po", "-o", "wide", "-w")
    lines: queue.Queue[str] = queue.Queue()
    assert watcher.stdout is not None
    reader = threading.Thread(target=lambda: [lines.put(line) for line in watcher.stdout or []], daemon=True)
    reader.start()
    try:
        seen = [lines.get(timeout=30), lines.get(timeout=30)]
        bind(kubectl, "watched", "las1")
        seen.append(lines.get(timeout=30))
        write_status(kubectl, "watched", running("192.168.221.190"))
        seen.append(lines.get(timeout=30))
    finally:
        watcher.terminate()
        watcher.communicate(timeout=10)
    table = rows("".join(seen))
    assert table[0][:3] == ["NAME", "READY", "STATUS"]
    states = [(row[2], row[6]) for row in table[1:]]
    assert states == [("Pending", "<none>"), ("Pending", "las1"), ("Running", "las1")]
    assert table[-1][5] == "192.168.221.190"


def test_podgroup_columns_and_wide_queue(kubectl: Kubectl) -> None:
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "tftest"},
        "spec": {"minMember": 4},
    }
    kubectl.run("create", "-f", "-", stdin=json.dumps(group))
    # No phase and no running count yet: STATUS and RUNNINGS print empty, so the row has 3 cells.
    table = rows(kubectl.run("get", "podgroup").stdout)
    assert table[0] == ["NAME", "STATUS", "MINMEMBER", "RUNNINGS", "AGE"]
    assert table[1][:2] == ["tftest", "4"] and re.fullmatch(r"\d+s", table[1][2]), table
    assert rows(kubectl.run("get", "pg").stdout)[1][:2] == ["tftest", "4"]  # the short name
    kubectl.run(
        "patch", "pg", "tftest", "--type=merge", "-p", '{"status": {"phase": "Running", "running": 4}}'
    )
    wide = rows(kubectl.run("get", "pg", "-o", "wide").stdout)
    assert wide[0] == ["NAME", "STATUS", "MINMEMBER", "RUNNINGS", "AGE", "QUEUE"]
    assert wide[1][:4] == ["tftest", "Running", "4", "4"] and wide[1][5] == "default"
    kubectl.run("delete", "pg", "tftest")


def test_delete_with_and_without_wait(api: ApiServerHandle, kubectl: Kubectl) -> None:
    create_pod(kubectl, "quick")
    assert kubectl.run("delete", "po", "quick").stdout.strip().startswith('pod "quick" deleted')
    create_pod(kubectl, "nowait")
    assert (
        kubectl.run("delete", "po", "nowait", "--wait=false")
        .stdout.strip()
        .startswith('pod "nowait" deleted')
    )
    assert "NotFound" in kubectl.run("get", "po", "nowait", check=False).stderr


def test_request_log_records_verbs_and_users(api: ApiServerHandle, kubectl: Kubectl) -> None:
    _token, path = api.add_user("system:serviceaccount:tfgang:controller")
    api.clear_request_log()
    controller = Kubectl(path, kubectl.cache_dir)
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "logged"}, "data": {"a": "1"}}
    controller.run("create", "-f", "-", stdin=json.dumps(configmap))
    controller.run("get", "configmap", "logged")
    controller.run("delete", "configmap", "logged")
    records = [r for r in api.request_log() if r.resource == "configmaps"]
    assert [(r.verb, r.name, r.code) for r in records] == [
        ("create", "", 201),
        ("get", "logged", 200),
        ("delete", "logged", 200),
        ("get", "logged", 404),
    ]
    assert {r.user for r in records} == {"system:serviceaccount:tfgang:controller"}
    assert all(r.namespace == "default" and r.group == "" and r.version == "v1" for r in records)
