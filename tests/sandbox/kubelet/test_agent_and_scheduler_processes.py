"""`tfgang-sandbox kubelet` and `tfgang-sandbox scheduler` as separate processes, as `up` runs them."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from kube.api import KubeApi
from kube.client import make_api_client
from kube.resources import PODS
from sandbox.__main__ import main

from .harness import eventually, get_pod, pod_manifest, start_apiserver, status_column


async def sandbox_process(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sandbox",
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["kubelet", "--nodes", "Bad_Name"], "invalid node name"),
        (["kubelet", "--nodes", "las1", "--log-port", "70000"], "--log-port"),
        (["scheduler", "--kubeconfig", "/nonexistent/kubeconfig"], "does not exist"),
    ],
)
def test_bad_arguments_fail_with_a_clear_message(
    args: list[str], message: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert main(args) == 2
    assert message in caplog.text


async def test_the_two_processes_run_a_pod_and_stop_their_containers_on_sigterm(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    with start_apiserver() as handle:
        kubelet = await sandbox_process(
            "kubelet",
            "--kubeconfig",
            handle.kubeconfig,
            "--nodes",
            "las1",
            "--state-dir",
            str(tmp_path / "state"),
        )
        scheduler = await sandbox_process(
            "scheduler", "--kubeconfig", handle.kubeconfig, "--min-interval", "0.1"
        )
        api = KubeApi(await make_api_client(handle.kubeconfig))
        try:
            # "$$$$" is "$$" after Kubernetes' $(VAR) expansion: the shell's own pid.
            await api.create(PODS, pod_manifest("sleeper", f"echo $$$$ > {marker}; sleep 1000 & wait"))

            async def running() -> bool:
                return status_column(await get_pod(api, "sleeper")) == "Running" and marker.exists()

            await eventually(running, within=30, what="the pod to run")
            shell_pid = int(marker.read_text())
        finally:
            for process in (kubelet, scheduler):
                process.send_signal(signal.SIGTERM)
            codes = [await asyncio.wait_for(p.wait(), 30) for p in (kubelet, scheduler)]
            await api.close()
        assert codes == [0, 0]
        with pytest.raises(ProcessLookupError):
            os.kill(shell_pid, 0)
