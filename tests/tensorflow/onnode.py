"""The TensorFlow example's TFJobs on the one-node cluster, as its tests, benchmark and demo drive
them: the image built and imported, a job submitted from the example's YAML, its pods' logs read
as progress (``trainlog``), a worker deleted or evicted, the job waited for.

Everything goes through kubectl with the node's admin kubeconfig (a loopback port forwarded into
the node's network namespace), as a user would.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .trainlog import EXAMPLE_DIR, Run, runs

IMAGE = "tfgang-example-tensorflow:0.1.0"
IMAGE_ENV = "TFGANG_TF_EXAMPLE_IMAGE"
"""A folder ``scripts/real-images dockerfile`` printed (``images.txt`` + archive); built when unset."""
REPO = EXAMPLE_DIR.parents[1]
IMAGES_SCRIPT = REPO / "scripts" / "real-images"
NAMESPACE = "default"
STATED_ACCURACY = 0.9
"""What the example promises on the 360 held-out digits after its 10 epochs (it reaches 0.96-0.98)."""


class JobError(AssertionError):
    pass


def image_folder() -> Path:
    """``$TFGANG_TF_EXAMPLE_IMAGE``, else the folder ``scripts/real-images dockerfile`` builds or
    reuses (cached by a hash of examples/tensorflow/)."""
    explicit = os.environ.get(IMAGE_ENV)
    if explicit:
        return Path(explicit)
    built = subprocess.run(
        ["bash", str(IMAGES_SCRIPT), "dockerfile", IMAGE, str(EXAMPLE_DIR)],
        capture_output=True,
        check=False,
        timeout=3600,
    )
    if built.returncode != 0:
        tail = built.stderr.decode(errors="replace")[-3000:]
        raise JobError(f"scripts/real-images dockerfile failed with code {built.returncode}:\n{tail}")
    return Path(built.stdout.decode().strip().splitlines()[-1])


def image_archive(folder: Path) -> tuple[Path, str]:
    """The archive and the image name of the folder's one-line ``images.txt``."""
    archive, name = (folder / "images.txt").read_text().split()[:2]
    return folder / archive, name


def example_job(
    file: str,
    name: str,
    checkpoints: Path,
    env: dict[str, str] | None = None,
    workers: int | None = None,
) -> dict[str, Any]:
    """The example's TFJob from ``file``, renamed, with its checkpoints in ``checkpoints`` (a host
    folder of this run, not the example's fixed path) and ``env`` added to every replica."""
    job: dict[str, Any] = copy.deepcopy(yaml.safe_load((EXAMPLE_DIR / file).read_text()))
    job["metadata"]["name"] = name
    job["metadata"]["namespace"] = NAMESPACE
    specs = job["spec"]["tfReplicaSpecs"]
    if workers is not None:
        specs["Worker"]["replicas"] = workers
    for spec in specs.values():
        pod = spec["template"]["spec"] = copy.deepcopy(spec["template"]["spec"])  # YAML anchors share it
        for volume in pod["volumes"]:
            if volume["name"] == "checkpoints":
                volume["hostPath"]["path"] = str(checkpoints)
        container = pod["containers"][0]
        known = {entry["name"]: entry for entry in container["env"]}
        for key, value in (env or {}).items():
            if key in known:
                known[key]["value"] = value
            else:
                container["env"].append({"name": key, "value": value})
    return job


@dataclass
class Cluster:
    """kubectl on the node, and what the example's tests ask of it."""

    kubectl_binary: Path
    kubeconfig: str

    def kubectl(self, *args: str, stdin: str | None = None, timeout: float = 90.0, check: bool = True) -> str:
        done = subprocess.run(
            [str(self.kubectl_binary), "--kubeconfig", self.kubeconfig, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise JobError(f"kubectl {' '.join(args)} failed: {done.stderr}")
        return done.stdout

    def submit(self, job: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", stdin=json.dumps(job))

    def delete_job(self, name: str) -> None:
        self.kubectl(
            "delete", "tfjob", name, "-n", NAMESPACE, "--ignore-not-found", "--wait=true", timeout=180
        )

    def job(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.kubectl("get", "tfjob", name, "-n", NAMESPACE, "-o", "json"))
        return found

    def pod(self, name: str) -> dict[str, Any] | None:
        out = self.kubectl("get", "pod", name, "-n", NAMESPACE, "-o", "json", "--ignore-not-found")
        return json.loads(out) if out.strip() else None

    def log(self, pod: str, *, previous: bool = False) -> str:
        args = ["logs", pod, "-n", NAMESPACE, "-c", "tensorflow"]
        return self.kubectl(*args, *(["--previous"] if previous else []), check=False)

    def follow_log(self, pod: str, into: Path) -> subprocess.Popen[bytes]:
        """``kubectl logs -f`` into a file, until the container ends: the whole log of a pod that
        tfgang is about to delete."""
        with into.open("wb") as sink:
            argv = [str(self.kubectl_binary), "--kubeconfig", self.kubeconfig, "logs", "-f", pod]
            return subprocess.Popen(
                [*argv, "-n", NAMESPACE, "-c", "tensorflow"],
                stdout=sink,
                stderr=subprocess.STDOUT,
            )

    def delete_pod(self, pod: str) -> None:
        self.kubectl("delete", "pod", pod, "-n", NAMESPACE, "--wait=false")

    def evict_pod(self, pod: str) -> None:
        """An eviction through the API (policy/v1 Eviction), as ``kubectl drain`` sends it."""
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod, "namespace": NAMESPACE},
        }
        self.kubectl(
            "create", "--raw", f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/eviction", "-f", "-",
            stdin=json.dumps(eviction),
        )  # fmt: skip


def wait_for(what: str, check: Callable[[], Any], timeout: float, interval: float = 0.5) -> Any:
    """``check()``'s first truthy value within ``timeout`` seconds, else JobError naming ``what``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise JobError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def condition(job: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for entry in job.get("status", {}).get("conditions") or []:
        if entry.get("type") == kind and entry.get("status") == "True":
            return dict(entry)
    return None


def wait_finished(cluster: Cluster, name: str, timeout: float) -> dict[str, Any]:
    """The job once it has a True Succeeded or Failed condition."""

    def finished() -> dict[str, Any] | None:
        job = cluster.job(name)
        return job if condition(job, "Succeeded") or condition(job, "Failed") else None

    found: dict[str, Any] = wait_for(f"TFJob {name} to finish", finished, timeout, interval=1.0)
    return found


def wait_epoch(cluster: Cluster, pod: str, epoch: int, timeout: float) -> list[Run]:
    """The pod's runs once its log shows ``epoch`` finished."""

    def reached() -> list[Run] | None:
        found = runs(cluster.log(pod))
        return found if found and (found[-1].last_epoch or 0) >= epoch else None

    result: list[Run] = wait_for(f"pod {pod} to finish epoch {epoch}", reached, timeout)
    return result


def worker_pods(name: str, workers: int) -> list[str]:
    return [f"{name}-worker-{index}" for index in range(workers)]


def service_addresses(name: str, rtype: str, count: int) -> list[str]:
    return [f"{name}-{rtype}-{index}.{NAMESPACE}.svc:2222" for index in range(count)]
