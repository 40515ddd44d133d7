"""The pod table matches what kube-apiserver prints; the seed transcript's rows are the reference."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kubeobjects.times import human_duration
from sandbox.apiserver.podtable import pod_row

CREATED = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)


def at(seconds: float) -> str:
    return (CREATED + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    *,
    node: str = "",
    phase: str = "Pending",
    state: dict[str, Any] | None = None,
    ready: bool = False,
    restarts: int = 0,
    last_finished: float | None = None,
    ip: str = "",
    deleting: bool = False,
) -> dict[str, Any]:
    container_status: dict[str, Any] = {
        "name": "tensorflow",
        "ready": ready,
        "restartCount": restarts,
        "state": state or {"waiting": {"reason": "ContainerCreating"}},
        "image": "busybox:1.37.0-glibc",
    }
    if last_finished is not None:
        container_status["lastState"] = {
            "terminated": {"exitCode": 1, "reason": "Error", "finishedAt": at(last_finished)}
        }
    status: dict[str, Any] = {"phase": phase}
    if state is not None or node:
        status["containerStatuses"] = [container_status] if state is not None else []
    if ip:
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    obj: dict[str, Any] = {
        "metadata": {"name": "tftest-worker-0", "creationTimestamp": at(0)},
        "spec": {"containers": [{"name": "tensorflow"}], "nodeName": node},
        "status": status,
    }
    if deleting:
        obj["metadata"]["deletionTimestamp"] = at(60)
    return obj


RUNNING = {"running": {"startedAt": at(2)}}
ERROR = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": at(13)}}
COMPLETED = {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": at(32)}}
BACKOFF = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"}}
IP = "192.168.221.140"

# (pod, seconds since creation, the seed transcript's row after NAME)
SEED_ROWS = [
    (pod(), 0, "0/1 Pending 0 0s <none> <none> <none> <none>"),
    (pod(node="las1"), 1, "0/1 Pending 0 1s <none> las1 <none> <none>"),
    (
        pod(node="las1", state={"waiting": {"reason": "ContainerCreating"}}),
        1,
        "0/1 ContainerCreating 0 1s <none> las1 <none> <none>",
    ),
    (
        pod(node="las1", phase="Running", state=RUNNING, ready=True, ip=IP),
        3,
        f"1/1 Running 0 3s {IP} las1 <none> <none>",
    ),
    (pod(node="las1", phase="Running", state=ERROR, ip=IP), 13, f"0/1 Error 0 13s {IP} las1 <none> <none>"),
    (
        pod(node="las1", phase="Running", state=RUNNING, ready=True, restarts=1, last_finished=11, ip=IP),
        14,
        f"1/1 Running 1 (3s ago) 14s {IP} las1 <none> <none>",
    ),
    (
        pod(node="las1", phase="Running", state=ERROR, restarts=1, last_finished=11, ip=IP),
        24,
        f"0/1 Error 1 (13s ago) 24s {IP} las1 <none> <none>",
    ),
    (
        pod(node="las1", phase="Succeeded", state=COMPLETED, ip=IP),
        32,
        f"0/1 Completed 0 32s {IP} las1 <none> <none>",
    ),
    (
        pod(node="las1", phase="Running", state=BACKOFF, restarts=1, last_finished=22, ip=IP),
        36,
        f"0/1 CrashLoopBackOff 1 (14s ago) 36s {IP} las1 <none> <none>",
    ),
    (
        pod(
            node="las1",
            phase="Running",
            state=RUNNING,
            ready=True,
            restarts=2,
            last_finished=22,
            ip=IP,
            deleting=True,
        ),
        37,
        f"1/1 Terminating 2 (15s ago) 37s {IP} las1 <none> <none>",
    ),
    (
        pod(node="las1", phase="Failed", state=ERROR, restarts=2, last_finished=22, ip=IP, deleting=True),
        38,
        f"0/1 Error 2 (16s ago) 38s {IP} las1 <none> <none>",
    ),
    (
        pod(node="las1", phase="Running", state=BACKOFF, restarts=4, last_finished=163, ip=IP),
        183,
        f"0/1 CrashLoopBackOff 4 (20s ago) 3m3s {IP} las1 <none> <none>",
    ),
]


@pytest.mark.parametrize(("obj", "seconds", "expected"), SEED_ROWS)
def test_pod_rows_match_the_seed_transcript(obj: dict[str, Any], seconds: float, expected: str) -> None:
    cells = pod_row(obj, CREATED + datetime.timedelta(seconds=seconds))
    assert cells[0] == "tftest-worker-0"
    assert " ".join(str(cell) for cell in cells[1:]) == expected


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (59, "59s"),
        (119, "119s"),
        (154, "2m34s"),
        (600, "10m"),
        (3 * 3600, "3h"),
        (7 * 3600 + 60, "7h1m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 3600, "3d1h"),
        (400 * 86400, "400d"),
    ],
)
def test_ages_are_printed_like_kubectl(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_signal_and_exit_code_without_reason() -> None:
    killed = pod(node="las1", phase="Running", state={"terminated": {"exitCode": 137, "signal": 9}})
    assert pod_row(killed, CREATED)[2] == "Signal:9"
    exited = pod(node="las1", phase="Running", state={"terminated": {"exitCode": 3}})
    assert pod_row(exited, CREATED)[2] == "ExitCode:3"


def test_init_containers_and_readiness_gates() -> None:
    obj = pod(node="las1")
    obj["spec"]["initContainers"] = [{"name": "setup"}]
    obj["spec"]["readinessGates"] = [{"conditionType": "example.com/ready"}]
    obj["status"]["initContainerStatuses"] = [{"name": "setup", "state": {"running": {}}, "restartCount": 0}]
    obj["status"]["conditions"] = [{"type": "example.com/ready", "status": "True"}]
    cells = pod_row(obj, CREATED)
    assert cells[2] == "Init:0/1"
    assert cells[8] == "1/1"
