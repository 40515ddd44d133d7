"""``tfgang-sandbox up`` as a process: kubeconfig written, CRDs served, clean stop on SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.sandbox.apiserver.conftest import REPO, Kubectl


def test_up_api_only_serves_until_sigterm(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "up.kubeconfig"
    process = subprocess.Popen(
        [sys.executable, "-m", "sandbox", "up", "--api-only", "--kubeconfig", str(kubeconfig)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("sandbox API server at https://127.0.0.1:"), first
        assert f"kubeconfig written to {kubeconfig}" in first
        kubectl = Kubectl(str(kubeconfig), str(tmp_path / "cache"))
        crds = kubectl.run("get", "crd", "-o", "name").stdout.split()
        assert crds == [
            "customresourcedefinition.apiextensions.k8s.io/hypernodes.topology.volcano.sh",
            "customresourcedefinition.apiextensions.k8s.io/podgroups.scheduling.volcano.sh",
            "customresourcedefinition.apiextensions.k8s.io/queues.scheduling.volcano.sh",
            "customresourcedefinition.apiextensions.k8s.io/tfjobs.kubeflow.org",
        ]
        assert kubectl.run("get", "nodes").stderr.strip() == "No resources found"
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=20)
    assert process.returncode == 0
    assert "stopping the sandbox" in output


def test_up_refuses_a_missing_crd_file(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sandbox",
            "up",
            "--api-only",
            "--kubeconfig",
            str(tmp_path / "k"),
            "--tfjob-crd",
            str(tmp_path / "missing.yaml"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "does not exist" in result.stdout


def test_up_fault_flags_set_the_standing_faults(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "up.kubeconfig"
    argv = [sys.executable, "-m", "sandbox", "up", "--api-only", "--kubeconfig", str(kubeconfig)]
    flags = ["--fault-error-rate", "0.2", "--fault-error-code", "503", "--fault-latency", "0.01"]
    process = subprocess.Popen(
        [*argv, *flags], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("sandbox API server at")
        kubectl = Kubectl(str(kubeconfig), str(tmp_path / "cache"))
        shown = json.loads(kubectl.run("get", "--raw", "/sandbox/faults").stdout)
        assert shown["errors"] == {"fraction": 0.2, "code": 503, "retryAfterSeconds": 1}
        assert shown["latencySeconds"] == 0.01
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)
    bad = subprocess.run([*argv, "--fault-error-rate", "1.5"], cwd=REPO, capture_output=True, text=True)
    assert bad.returncode == 2 and "must be within 0..1" in bad.stderr
