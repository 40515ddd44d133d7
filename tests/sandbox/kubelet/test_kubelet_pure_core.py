"""The node agent's pure core: node specs, back-off, pod phase and status, env resolution, IPs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeobjects.times import go_duration
from sandbox.kubelet.backoff import BackoffEntry, BackoffPolicy, after_restart, restart_delay
from sandbox.kubelet.containers import (
    ContainerRecord,
    Running,
    Terminated,
    Waiting,
    after_exit,
    after_pod_stopped,
    exit_code_of,
)
from sandbox.kubelet.envvars import (
    EnvError,
    PodFacts,
    command_line,
    expand,
    plan_launch,
    referenced_sources,
    resolve_env,
)
from sandbox.kubelet.ipam import PodIpAllocator, PodIpExhausted
from sandbox.kubelet.nodespec import NodeSpecError, parse_nodes
from sandbox.kubelet.podstatus import PodView, compose_status, compute_phase, should_restart, waiting_records

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"


def make_pod(restart_policy: str = "OnFailure", containers: int = 1, **extra_spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "tftest-ps-0", "namespace": "default", "uid": "u1", "labels": {"role": "ps"}},
        "spec": {
            "nodeName": "las1",
            "restartPolicy": restart_policy,
            "containers": [{"name": f"c{i}", "image": "busybox"} for i in range(containers)],
            **extra_spec,
        },
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": T0}],
        },
    }


def record(
    state: Any, last: Terminated | None = None, restarts: int = 0, name: str = "c0"
) -> ContainerRecord:
    return ContainerRecord(name, "busybox", state, last, restarts, "sandbox://1")


# --- node specs -------------------------------------------------------------------------------


def test_parse_nodes_with_defaults_and_overrides() -> None:
    specs = parse_nodes("las1:cpu=8,memory=32Gi;las2:cpu=4,pods=10;las3")
    assert [s.name for s in specs] == ["las1", "las2", "las3"]
    assert specs[1].capacity == {"cpu": "4", "memory": "32Gi", "pods": "10"}
    assert specs[2].capacity == {"cpu": "8", "memory": "32Gi", "pods": "110"}
    assert parse_nodes("gpu1:nvidia.com/gpu=2")[0].capacity["nvidia.com/gpu"] == "2"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no nodes"),
        ("Las1", "invalid node name"),
        ("a:cpu", "resource=quantity"),
        ("a:cpu=lots", "cpu"),
        ("a;a", "unique"),
        ("a" * 254, "invalid node name"),
        ("a:example..com/gpu=1", "invalid resource name"),
        (f"a:example.com/{'g' * 64}=1", "invalid resource name"),
    ],
)
def test_bad_node_specs_fail_clearly(text: str, message: str) -> None:
    with pytest.raises(NodeSpecError, match=message):
        parse_nodes(text)


# --- back-off ---------------------------------------------------------------------------------


def test_backoff_restarts_at_once_then_doubles_to_the_cap() -> None:
    policy = BackoffPolicy()
    entry: BackoffEntry | None = None
    now = 0.0
    delays = []
    for _ in range(8):
        finished = now + 1  # each run lasts one second
        delay = restart_delay(entry, finished, policy)
        delays.append(delay)
        now = finished + delay
        entry = after_restart(entry, now, policy)
    assert delays == [0, 10, 20, 40, 80, 160, 300, 300]


def test_backoff_resets_after_ten_minutes_of_running() -> None:
    policy = BackoffPolicy()
    entry = after_restart(after_restart(None, 0, policy), 20, policy)
    assert restart_delay(entry, 20 + 599, policy) == 20
    assert restart_delay(entry, 20 + 601, policy) == 0
    assert after_restart(entry, 20 + 601, policy).delay == 10


def test_scaled_backoff_for_tests() -> None:
    assert BackoffPolicy.scaled(0.2) == BackoffPolicy(0.2, pytest.approx(6.0), pytest.approx(1.2))
    with pytest.raises(ValueError):
        BackoffPolicy.scaled(0)


@pytest.mark.parametrize(
    ("seconds", "text"), [(10, "10s"), (80, "1m20s"), (300, "5m0s"), (0.2, "200ms"), (2.5, "2.5s")]
)
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


# --- phase ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "exit_code", "phase"),
    [
        ("Never", 1, "Failed"),
        ("Never", 0, "Succeeded"),
        ("OnFailure", 0, "Succeeded"),
        ("OnFailure", 1, "Running"),
        ("Always", 0, "Running"),
        ("Always", 1, "Running"),
    ],
)
def test_phase_after_the_only_container_exits(policy: str, exit_code: int, phase: str) -> None:
    assert compute_phase(policy, [record(Terminated(exit_code, T0, T1))]) == phase


def test_phase_while_creating_running_and_backing_off() -> None:
    assert compute_phase("Always", [record(Waiting("ContainerCreating"))]) == "Pending"
    assert compute_phase("Always", [record(Running(T0))]) == "Running"
    crashed = record(Waiting("CrashLoopBackOff"), last=Terminated(1, T0, T1), restarts=1)
    assert compute_phase("OnFailure", [crashed]) == "Running"


def test_a_deleted_pod_whose_containers_were_killed_is_terminal_whatever_the_policy() -> None:
    killed = record(Terminated(143, T0, T1))
    assert compute_phase("Always", [killed], deleting=True) == "Failed"
    assert compute_phase("Always", [record(Terminated(0, T0, T1))], deleting=True) == "Succeeded"


@pytest.mark.parametrize(
    ("policy", "exit_code", "restart"),
    [
        ("Always", 0, True),
        ("Always", 2, True),
        ("OnFailure", 0, False),
        ("OnFailure", 2, True),
        ("Never", 2, False),
    ],
)
def test_should_restart(policy: str, exit_code: int, restart: bool) -> None:
    assert should_restart(policy, exit_code) is restart


def test_exit_code_of_signals() -> None:
    assert exit_code_of(-9) == (137, 9)
    assert exit_code_of(3) == (3, None)


# --- status composition -------------------------------------------------------------------------


def test_container_creating_status() -> None:
    pod = make_pod()
    view = PodView(
        waiting_records(pod, "ContainerCreating"), host_ip="127.0.0.1", start_time=T1, sandbox_ready=True
    )
    status = compose_status(pod, view, T1)

    assert status["phase"] == "Pending"
    assert "podIP" not in status
    (container,) = status["containerStatuses"]
    assert container["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert (container["ready"], container["started"], container["restartCount"]) == (False, False, 0)
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["PodScheduled"]["lastTransitionTime"] == T0  # kept from the scheduler
    assert conditions["Ready"]["reason"] == "ContainersNotReady"
    assert conditions["Ready"]["message"] == "containers with unready status: [c0]"
    assert conditions["PodReadyToStartContainers"]["status"] == "True"
    assert [c["type"] for c in status["conditions"]] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]


def test_running_status_publishes_the_pod_ip_and_readiness() -> None:
    pod = make_pod()
    view = PodView((record(Running(T2)),), "127.0.0.1", T1, pod_ip="10.244.0.2", sandbox_ready=True)
    status = compose_status(pod, view, T2)

    assert (status["phase"], status["podIP"], status["podIPs"]) == (
        "Running",
        "10.244.0.2",
        [{"ip": "10.244.0.2"}],
    )
    (container,) = status["containerStatuses"]
    assert container["state"] == {"running": {"startedAt": T2}}
    assert (container["ready"], container["started"], container["containerID"]) == (True, True, "sandbox://1")
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"


def test_crash_loop_status_keeps_the_last_termination() -> None:
    pod = make_pod()
    message = "back-off 10s restarting failed container=c0 pod=tftest-ps-0_default(u1)"
    crashed = ContainerRecord(
        "c0", "busybox", Waiting("CrashLoopBackOff", message), Terminated(1, T0, T1), 1, "", "sandbox://1"
    )
    status = compose_status(pod, PodView((crashed,), "127.0.0.1", T0, "10.244.0.2", True), T2)

    (container,) = status["containerStatuses"]
    assert container["state"] == {"waiting": {"reason": "CrashLoopBackOff", "message": message}}
    assert container["lastState"] == {
        "terminated": {
            "exitCode": 1,
            "reason": "Error",
            "startedAt": T0,
            "finishedAt": T1,
            "containerID": "sandbox://1",
        }
    }
    assert container["restartCount"] == 1
    assert status["phase"] == "Running"


def test_completed_pod_conditions() -> None:
    pod = make_pod("Never")
    status = compose_status(
        pod, PodView((record(Terminated(0, T0, T1)),), "127.0.0.1", T0, "10.244.0.2", True), T2
    )

    assert status["phase"] == "Succeeded"
    (container,) = status["containerStatuses"]
    assert container["state"]["terminated"]["reason"] == "Completed"
    conditions = {c["type"]: c for c in status["conditions"]}
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "PodCompleted")
    assert conditions["PodReadyToStartContainers"]["status"] == "False"


def test_failed_pod_conditions_say_pod_failed_as_the_kubelet_writes_them() -> None:
    status = compose_status(
        make_pod("Never"), PodView((record(Terminated(1, T0, T1)),), "127.0.0.1", T0, "10.244.0.2", True), T2
    )

    assert status["phase"] == "Failed"
    conditions = {
        c["type"]: (c["status"], c.get("reason", ""), c.get("message", "")) for c in status["conditions"]
    }
    assert conditions["Ready"] == conditions["ContainersReady"] == ("False", "PodFailed", "")
    assert conditions["Initialized"] == ("True", "", "")  # PodCompleted only for a pod that succeeded
    assert conditions["PodReadyToStartContainers"] == (
        "False",
        "PodSandboxNotReady",
        "pod sandbox is not ready",
    )


def test_a_pod_not_started_yet_has_no_sandbox() -> None:
    pod = make_pod("Never")
    view = PodView(waiting_records(pod, "ContainerCreating"), "127.0.0.1", T0, sandbox_created=False)
    conditions = {c["type"]: c for c in compose_status(pod, view, T1)["conditions"]}
    ready_to_start = conditions["PodReadyToStartContainers"]
    assert (ready_to_start["reason"], ready_to_start["message"]) == (
        "PodSandboxNotReady",
        "no pod sandbox exists",
    )


def test_a_terminated_state_carries_no_signal() -> None:
    (container,) = compose_status(
        make_pod("Never"), PodView((record(Terminated(137, T0, T1, 9)),), "127.0.0.1", T0), T2
    )["containerStatuses"]
    assert container["state"]["terminated"]["exitCode"] == 137
    assert "signal" not in container["state"]["terminated"]


def test_unchanged_conditions_keep_their_transition_time() -> None:
    pod = make_pod()
    view = PodView((record(Running(T1)),), "127.0.0.1", T0, "10.244.0.2", True)
    pod["status"] = compose_status(pod, view, T1)
    again = compose_status(pod, view, T2)
    assert {c["type"]: c["lastTransitionTime"] for c in again["conditions"]}["Ready"] == T1


# --- environment --------------------------------------------------------------------------------


def test_env_resolution_with_field_refs_values_and_expansion() -> None:
    pod = make_pod()
    container = {
        "name": "tensorflow",
        "resources": {"limits": {"cpu": "1500m", "memory": "100Mi"}},
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
            {"name": "ROLE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['role']"}}},
            {"name": "CPUS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {
                "name": "MEM_MI",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
            },
            {"name": "TF_CONFIG", "value": '{"task":{"type":"ps","index":0}}'},
            {"name": "GREETING", "value": "$(POD_NAME) in $(NS) costs $$(CPUS), $(UNDEFINED)"},
        ],
        "command": ["sh", "-c", "echo $(POD_NAME) $$HOME"],
    }
    env = resolve_env(pod, container, PodFacts("10.244.0.5", "127.0.0.1"))
    assert env == {
        "POD_NAME": "tftest-ps-0",
        "NS": "default",
        "NODE": "las1",
        "IP": "10.244.0.5",
        "HOST": "127.0.0.1",
        "ROLE": "ps",
        "CPUS": "2",
        "MEM_MI": "100",
        "TF_CONFIG": '{"task":{"type":"ps","index":0}}',
        "GREETING": "tftest-ps-0 in default costs $(CPUS), $(UNDEFINED)",
    }
    assert command_line(container, env) == ["sh", "-c", "echo tftest-ps-0 $HOME"]


def test_env_from_config_maps_and_secrets() -> None:
    container = {
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
        "env": [
            {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
            {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k", "optional": True}}},
        ],
    }
    assert referenced_sources(container) == {("ConfigMap", "cm"), ("Secret", "s"), ("ConfigMap", "gone")}
    env = resolve_env(
        make_pod(),
        container,
        PodFacts("", ""),
        {("ConfigMap", "cm"): {"a": "1"}, ("Secret", "s"): {"pw": "x"}},
    )
    assert env == {"CM_a": "1", "PASSWORD": "x"}
    with pytest.raises(EnvError, match='secret "s" not found'):
        resolve_env(make_pod(), container, PodFacts("", ""), {("ConfigMap", "cm"): {}})


def test_unsupported_field_paths_are_clear_errors() -> None:
    container = {"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.nope"}}}]}
    with pytest.raises(EnvError, match=r"spec\.nope"):
        resolve_env(make_pod(), container, PodFacts("", ""))


def test_expand_edge_cases() -> None:
    assert expand("$(A)$(B)$", {"A": "x"}) == "x$(B)$"
    assert expand("$(A", {"A": "x"}) == "$(A"


# --- pod IPs ------------------------------------------------------------------------------------


def test_pod_ips_are_unique_per_pod_and_reused_after_release() -> None:
    ipam = PodIpAllocator(3)
    first, second = ipam.allocate("a"), ipam.allocate("b")
    assert (first, second, ipam.allocate("a")) == ("10.244.3.2", "10.244.3.3", "10.244.3.2")
    ipam.release("a")
    addresses = {ipam.allocate(str(i)) for i in range(252)}
    assert first in addresses and second not in addresses
    with pytest.raises(PodIpExhausted):
        ipam.allocate("one-too-many")


def test_plan_launch_builds_the_process(tmp_path: Path) -> None:
    container = {
        "name": "main",
        "command": ["sh", "-c"],
        "args": ["echo $(GREETING)"],
        "env": [{"name": "GREETING", "value": "hi"}, {"name": "HOME", "value": "/override"}],
        "workingDir": "/does/not/exist/here",
    }
    launch = plan_launch(make_pod(), container, PodFacts("10.244.0.2", "127.0.0.1"), {}, tmp_path, "/usr/bin")
    assert launch.argv == ("sh", "-c", "echo hi")
    assert launch.env == {
        "PATH": "/usr/bin",
        "HOME": "/override",
        "HOSTNAME": "tftest-ps-0",
        "GREETING": "hi",
    }
    assert launch.cwd == tmp_path
    container["workingDir"] = str(tmp_path / "..")
    assert (
        plan_launch(make_pod(), container, PodFacts("", ""), {}, tmp_path, "/usr/bin").cwd == tmp_path / ".."
    )


def test_phase_and_status_while_initializing() -> None:
    pod = make_pod("OnFailure")
    waiting = (record(Waiting("PodInitializing")),)
    running_init = (ContainerRecord("init", "busybox", Running(T1)),)
    assert compute_phase("OnFailure", waiting, init_containers=running_init) == "Pending"
    failed_init = (ContainerRecord("init", "busybox", Terminated(1, T0, T1)),)
    assert compute_phase("OnFailure", waiting, init_containers=failed_init) == "Pending"
    assert compute_phase("Never", waiting, init_containers=failed_init) == "Failed"
    done_init = (ContainerRecord("init", "busybox", Terminated(0, T0, T1)),)
    assert compute_phase("OnFailure", (record(Running(T2)),), init_containers=done_init) == "Running"

    view = PodView(waiting, "127.0.0.1", T0, sandbox_ready=True, init_containers=running_init)
    status = compose_status(pod, view, T1)
    initialized = {c["type"]: c for c in status["conditions"]}["Initialized"]
    assert (initialized["status"], initialized["message"]) == (
        "False",
        "containers with incomplete status: [init]",
    )
    (init_status,) = status["initContainerStatuses"]
    assert (init_status["name"], init_status["ready"], init_status["started"]) == ("init", False, True)
    done = compose_status(
        pod, PodView((record(Running(T2)),), "127.0.0.1", T0, init_containers=done_init), T2
    )
    assert done["initContainerStatuses"][0]["ready"] is True
    assert {c["type"]: c["status"] for c in done["conditions"]}["Initialized"] == "True"


def test_records_after_exit_and_after_the_pod_is_stopped() -> None:
    running = record(Running(T0))
    exited = after_exit(running, -15, T1)
    assert exited.state == Terminated(143, T0, T1, 15)
    assert after_exit(exited, 0, T2) is exited

    crashed = ContainerRecord(
        "c0", "busybox", Waiting("CrashLoopBackOff"), Terminated(1, T0, T1), 2, "", "id-1"
    )
    settled = after_pod_stopped(crashed, T2)
    assert (settled.state, settled.restart_count, settled.container_id) == (Terminated(1, T0, T1), 2, "id-1")

    never = after_pod_stopped(record(Waiting("ContainerCreating")), T2)
    assert isinstance(never.state, Terminated)
    assert (never.state.exit_code, never.state.reason) == (137, "ContainerStatusUnknown")
