"""The operator's processes for tests on the sandbox API server: webhook and controller.

- ``running_webhook(apiserver, workdir)``: issues certificates, starts ``python -m webhook`` as a real
  process and registers it with the API server (pods CREATE mutation, tfjobs CREATE/UPDATE
  validation, ``failurePolicy: Fail``); stops it on exit.
- ``running_controller(kubeconfig, config)``: the controller in-process, as an asyncio task.
- ``controller_process(kubeconfig, workdir, *flags)``: the controller as a real process.
- ``CONTROLLER_USER``: the identity the controller runs as, so the request log tells it apart.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controller.config import ControllerConfig
from controller.manager import Controller
from kube.api import KubeApi
from kube.client import make_api_client
from kube.leader import LeaseTerms
from kube.workqueue import Backoff
from realcluster.ports import free_port
from tfjob.settings import Settings

REPO = Path(__file__).resolve().parents[2]
WEBHOOK_NAME = "tfgang-webhook"
# The controller runs as its own user so the request log tells its requests apart.
CONTROLLER_USER = "tfgang-controller"


def _python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def _wait_http_ok(url: str, timeout: float, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} answered")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=1) as answer:
            if answer.status == 200:
                return
        time.sleep(0.1)
    raise TimeoutError(f"{url} not ready within {timeout}s")


def _stop_process(process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- the webhook --------------------------------------------------------------------------------


@dataclass(frozen=True)
class WebhookHandle:
    port: int
    ops_port: int
    process: subprocess.Popen[bytes]
    log: Path


def webhook_configurations(port: int, ca_bundle: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The mutating (pods) and validating (tfjobs) configurations pointing at 127.0.0.1:port."""
    common = {
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
    }
    mutating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_NAME},
        "webhooks": [
            {
                "name": "mutate-pods.tfgang.kubeflow.org",
                "clientConfig": {"url": f"https://127.0.0.1:{port}/mutate-pods", "caBundle": ca_bundle},
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    }
                ],
                "objectSelector": {
                    "matchExpressions": [
                        {"key": "training.kubeflow.org/job-name", "operator": "Exists"},
                        {
                            "key": "training.kubeflow.org/operator-name",
                            "operator": "In",
                            "values": ["tfjob-controller"],
                        },
                    ]
                },
                "reinvocationPolicy": "IfNeeded",
                **common,
            }
        ],
    }
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_NAME},
        "webhooks": [
            {
                "name": "validate-tfjobs.tfgang.kubeflow.org",
                "clientConfig": {"url": f"https://127.0.0.1:{port}/validate-tfjobs", "caBundle": ca_bundle},
                "rules": [
                    {
                        "apiGroups": ["kubeflow.org"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["tfjobs"],
                    }
                ],
                **common,
            }
        ],
    }
    return mutating, validating


def _kubectl_apply(kubeconfig: str, objects: list[dict[str, Any]]) -> None:
    kubectl = REPO / ".venv" / "bin" / "kubectl"
    binary = str(kubectl) if kubectl.exists() else "kubectl"
    subprocess.run(
        [binary, "--kubeconfig", kubeconfig, "apply", "-f", "-"],
        input=yaml.safe_dump_all(objects).encode(),
        check=True,
        capture_output=True,
        timeout=60,
    )


@contextlib.contextmanager
def running_webhook(apiserver: Any, workdir: Path) -> Iterator[WebhookHandle]:
    """Start the real webhook process and register it with the sandbox API server."""
    cert_dir = workdir / "webhook-certs"
    subprocess.run(
        _python_module(
            "certs",
            "issue",
            "--service",
            WEBHOOK_NAME,
            "--namespace",
            "default",
            "--out",
            str(cert_dir),
            "--ip-address",
            "127.0.0.1",
        ),
        check=True,
        capture_output=True,
        timeout=60,
    )
    port, ops_port = free_port(), free_port()
    log = workdir / "webhook.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            _python_module(
                "webhook",
                "--kubeconfig",
                str(apiserver.kubeconfig),
                "--cert-dir",
                str(cert_dir),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--ops-port",
                str(ops_port),
            ),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
    try:
        _wait_http_ok(f"http://127.0.0.1:{ops_port}/readyz", 30, process)
        ca_bundle = base64.b64encode((cert_dir / "ca.crt").read_bytes()).decode()
        _kubectl_apply(str(apiserver.kubeconfig), list(webhook_configurations(port, ca_bundle)))
        yield WebhookHandle(port, ops_port, process, log)
    finally:
        _stop_process(process)


# -- the controller -----------------------------------------------------------------------------


def controller_config(
    *,
    namespace: str = "",
    leader_identity: str | None = None,
    lease_name: str = "tfgang-controller",
    lease_namespace: str = "default",
    workers: int = 4,
    gang_scheduler_name: str = "volcano",
    pending_reason_grace_seconds: float = Settings.pending_reason_grace_seconds,
) -> ControllerConfig:
    election = None
    if leader_identity is not None:
        election = LeaseTerms(
            name=lease_name,
            namespace=lease_namespace,
            identity=leader_identity,
            lease_duration=3.0,
            renew_deadline=2.0,
            retry_period=0.5,
        )
    return ControllerConfig(
        namespace=namespace,
        leader_election=election,
        workers=workers,
        settings=Settings(
            gang_scheduler_name=gang_scheduler_name, pending_reason_grace_seconds=pending_reason_grace_seconds
        ),
        kube_api_qps=1000.0,
        kube_api_burst=1000,
    )


@contextlib.asynccontextmanager
async def running_controller(kubeconfig: str, config: ControllerConfig) -> AsyncIterator[Controller]:
    """The controller as an asyncio task; stopped gracefully on exit, its failure re-raised."""
    client = await make_api_client(kubeconfig)
    api = KubeApi(client, qps=config.kube_api_qps, burst=config.kube_api_burst)
    controller = Controller(api, config, backoff=Backoff(base=0.05, max=2.0))
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        async with asyncio.timeout(20):
            while not controller.ready:
                if task.done():
                    task.result()
                await asyncio.sleep(0.02)
        yield controller
    finally:
        stop.set()
        try:
            async with asyncio.timeout(15):
                await task
        finally:
            await api.close()


@contextlib.contextmanager
def controller_process(
    kubeconfig: str, workdir: Path, *flags: str, name: str = "controller", ready_within: float = 30
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """``python -m controller`` as a process; yields it and its ops port once /readyz answers."""
    ops_port = free_port()
    log = workdir / f"{name}.log"
    env = {**os.environ, "TFGANG_OPS_HOST": "127.0.0.1"}
    with log.open("ab") as log_file:
        process = subprocess.Popen(
            _python_module(
                "controller",
                "--kubeconfig",
                kubeconfig,
                "--ops-port",
                str(ops_port),
                "--kube-api-qps",
                "1000",
                "--kube-api-burst",
                "1000",
                *flags,
            ),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=env,
        )
    try:
        _wait_http_ok(f"http://127.0.0.1:{ops_port}/readyz", ready_within, process)
        yield process, ops_port
    finally:
        _stop_process(process)


def metrics_text(ops_port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{ops_port}/metrics", timeout=5) as answer:
        text: str = answer.read().decode()
        return text
