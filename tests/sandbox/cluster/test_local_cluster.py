"""The composed local cluster: every component a separate process with its own identity, the chart's
CRD and webhook configurations, clear errors, and nothing left running after it stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from realcluster.kubectl import find_kubectl
from sandbox.cluster import (
    CONTROLLER_IDENTITY,
    SCHEDULER_IDENTITY,
    WEBHOOK_IDENTITY,
    ClusterError,
    ClusterHandle,
    ClusterOptions,
    node_identity,
    start_cluster,
)
from sandbox.webhook_configs import webhook_configurations
from tests.polling import wait_for
from tests.sandbox.cluster.conftest import THREE_SMALL_NODES

CHART_CRD = Path(__file__).resolve().parents[3] / "charts" / "tfgang" / "crds" / "kubeflow.org_tfjobs.yaml"


def kubectl_json(handle: ClusterHandle, *args: str) -> Any:
    done = subprocess.run(
        [find_kubectl(), "--kubeconfig", str(handle.kubeconfig), *args, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_every_component_talks_to_the_api_as_itself(operator_cluster: ClusterHandle) -> None:
    expected = {
        SCHEDULER_IDENTITY.user,
        WEBHOOK_IDENTITY.user,
        CONTROLLER_IDENTITY.user,
        node_identity(THREE_SMALL_NODES).user,
    }

    def users() -> set[str] | None:
        seen = {record.user for record in operator_cluster.request_log()}
        return seen if expected <= seen else None

    wait_for(users, "a request from every component")
    pids = {child.spec.name: child.pid for child in operator_cluster.cluster.supervisor.children}
    assert sorted(pids) == ["controller", "kubelet", "scheduler", "webhook"]
    assert os.getpid() not in pids.values()
    assert len(set(pids.values())) == 4


def test_the_webhook_is_registered_with_the_charts_configurations(operator_cluster: ClusterHandle) -> None:
    cluster = operator_cluster.cluster
    ca = (cluster.workdir / "webhook-certs" / "ca.crt").read_bytes()
    import base64

    wanted = webhook_configurations(
        f"https://127.0.0.1:{cluster.webhook_port}", base64.b64encode(ca).decode()
    )
    for configuration in wanted:
        kind = configuration["kind"].lower()
        stored = kubectl_json(operator_cluster, "get", kind, configuration["metadata"]["name"])
        for stored_hook, wanted_hook in zip(stored["webhooks"], configuration["webhooks"], strict=True):
            for key, value in wanted_hook.items():
                assert stored_hook[key] == value, key


def test_the_tfjob_crd_is_the_charts(operator_cluster: ClusterHandle) -> None:
    chart = yaml.safe_load(CHART_CRD.read_text(encoding="utf-8"))
    stored = kubectl_json(operator_cluster, "get", "crd", chart["metadata"]["name"])
    assert stored["spec"]["names"] == chart["spec"]["names"]
    assert [v["name"] for v in stored["spec"]["versions"]] == [v["name"] for v in chart["spec"]["versions"]]


def test_the_webhook_admits_tfjobs_and_rejects_invalid_ones(operator_cluster: ClusterHandle) -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "invalid", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "not-tensorflow", "image": "busybox"}
        ]}}}}},
    }  # fmt: skip
    done = subprocess.run(
        [find_kubectl(), "--kubeconfig", str(operator_cluster.kubeconfig), "apply", "-f", "-"],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "validate-tfjobs.tfgang.kubeflow.org" in done.stderr


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(entry.name))
    return found


def test_stopping_the_cluster_stops_every_component_and_container() -> None:
    marker = "sleep 4321.5"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sleeper", "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", marker]}]},
    }
    with start_cluster(ClusterOptions()) as handle:
        subprocess.run(
            [find_kubectl(), "--kubeconfig", str(handle.kubeconfig), "apply", "-f", "-"],
            input=json.dumps(pod),
            text=True,
            capture_output=True,
            timeout=60,
            check=True,
        )
        wait_for(lambda: _processes_with(marker), "the pod's process")
        children = [child.pid for child in handle.cluster.supervisor.children]
        assert len(children) == 2
    for pid in children:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert _processes_with(marker) == []


def test_a_component_that_dies_is_reported_by_name() -> None:
    with start_cluster(ClusterOptions()) as handle:
        handle.check()
        scheduler = next(c for c in handle.cluster.supervisor.children if c.spec.name == "scheduler")
        os.kill(scheduler.pid, signal.SIGKILL)
        wait_for(lambda: handle.cluster.supervisor.failed.is_set(), "the supervisor to notice")
        with pytest.raises(ClusterError, match="scheduler exited unexpectedly"):
            handle.check()


def test_a_bad_node_spec_fails_the_start_with_the_components_name() -> None:
    started = time.monotonic()
    with (
        pytest.raises(ClusterError, match="kubelet exited unexpectedly with code 2"),
        start_cluster(ClusterOptions(nodes="las1:cpu=lots")),
    ):
        pass
    assert time.monotonic() - started < 30
