"""What the tests read from the node with the pinned kubectl: pods, a file in a container, the
certificate a pod serves (through ``kubectl port-forward``, so the test's traffic stays on loopback)."""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from realcluster.helmrelease import NAMESPACE, Release
from tests.integration.cluster import simple_job

FORWARDING = re.compile(r"Forwarding from 127\.0\.0\.1:(\d+) ->")


def pods_of(release: Release, component: str, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The running (not terminating) pods of the chart's ``component`` (webhook or controller)."""
    listed = release.kubectl_json(
        "-n", namespace, "get", "pods", "-l", f"app.kubernetes.io/component={component}"
    )
    return [pod for pod in listed["items"] if not pod["metadata"].get("deletionTimestamp")]


def restart_counts(pod: dict[str, Any]) -> dict[str, int]:
    return {status["name"]: status["restartCount"] for status in pod["status"].get("containerStatuses") or ()}


def file_in(release: Release, pod: str, path: str, namespace: str = NAMESPACE) -> str:
    return release.run(["kubectl", "-n", namespace, "exec", pod, "--", "cat", path]).stdout


@contextmanager
def forwarded(release: Release, pod: str, port: int, namespace: str = NAMESPACE) -> Iterator[int]:
    """A loopback port forwarded to ``pod``'s ``port`` by kube-apiserver and the kubelet."""
    process = subprocess.Popen(
        [str(release.kubectl), "--kubeconfig", str(release.kubeconfig), "-n", namespace,
         "port-forward", f"pod/{pod}", f":{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = FORWARDING.search(line)
        if match is None:
            raise RuntimeError(
                f"kubectl port-forward to {pod}:{port} said: {line}{process.stdout.read(2000)}"
            )
        yield int(match.group(1))
    finally:
        process.terminate()
        process.wait(10)


def served_certificate(release: Release, pod: str, port: int) -> str:
    """The leaf certificate ``pod`` presents on ``port``, as PEM."""
    with forwarded(release, pod, port) as local:
        deadline = time.monotonic() + 10
        while True:
            try:
                return ssl.get_server_certificate(("127.0.0.1", local), timeout=5)
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def same_certificate(a: str, b: str) -> bool:
    return ssl.PEM_cert_to_DER_cert(a) == ssl.PEM_cert_to_DER_cert(b)


def until(check: Any, within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within:.0f}s")
        time.sleep(1.0)


def small_job(
    name: str,
    namespace: str,
    script: str,
    *,
    workers: int = 1,
    ps: int = 0,
    restart_policy: str = "Never",
    run_policy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``tests.integration``'s small TFJob, whose containers run ``script`` (busybox ``sh -c``)."""
    job = simple_job(
        name, namespace, workers=workers, ps=ps, restart_policy=restart_policy, run_policy=run_policy
    )
    for spec in job["spec"]["tfReplicaSpecs"].values():
        (container,) = spec["template"]["spec"]["containers"]
        container["command"] = ["sh", "-c", script]
        container["imagePullPolicy"] = "IfNotPresent"
        # runc's own init runs inside the container's memory cgroup first: 10Mi is too tight.
        container["resources"] = {"limits": {"cpu": "100m", "memory": "32Mi"}}
    return job


def apply(release: Release, obj: dict[str, Any]) -> None:
    release.run(["kubectl", "apply", "-f", "-"], input_text=json.dumps(obj))


def job_state(release: Release, namespace: str, job: str) -> str:
    found = release.kubectl_json("-n", namespace, "get", "tfjob", job)
    conditions = (found.get("status") or {}).get("conditions") or []
    return str(conditions[-1]["type"]) if conditions else ""
