"""One seed experiment on a running local cluster, shown through kubectl's own watch output.

For each experiment the three watches of the transcript (``kubectl get tfjob|podgroup|po -owide
-w``) start first, then the seed's TFJob is applied with kubectl; the replay ends once the
transcript's final state holds, both in the API and in what the watches have printed:

- normal: TFJob Succeeded, PodGroup deleted, the workers Completed, ``tftest-ps-0`` has Completed;
- worker-failure: TFJob Failed through the backoff limit, PodGroup and every pod deleted;
- ps-failure: TFJob Succeeded, PodGroup deleted, the workers Completed and ``tftest-ps-0`` still
  restarting (shown Running after a second restart; the transcript goes on for minutes).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from kube.api import KubeApi
from kube.client import make_api_client
from kube.errors import NotFound
from kube.resources import PODGROUPS_V1BETA1, PODS, SERVICES, Resource
from realcluster.kubectl import KubectlError
from sandbox.cluster import LocalCluster
from sandbox.kubectl import Emit, WatchStream, environment_section, kubectl
from sandbox.watchrows import PodRow, RowError, parse_pod_row, parse_tfjob_row

TFJOBS: Final = Resource("kubeflow.org", "v1", "tfjobs", "TFJob")
JOB_NAME_LABEL: Final = "training.kubeflow.org/job-name"
STREAMS: Final = (("tfjob", "tfjobs"), ("podgroup", "podgroups"), ("po", "pods"))
"""kubectl's resource argument and the API plural of each watch, in the transcript's order."""
LABELS: Final = {"tfjob": "tfjob   ", "podgroup": "podgroup", "po": "pod     "}
SETTLE_SECONDS: Final = 1.0
"""Time left after the final state for the watches to print their last events."""


class SeedError(RuntimeError):
    """The seed manifests cannot be found or read."""


@dataclass(frozen=True)
class Experiment:
    name: str
    what: str
    outcome: str
    final_state: str


EXPERIMENTS: Final = {
    "normal": Experiment(
        "normal",
        "PS (Always) and 3 Workers (OnFailure), all sleep 30s and exit 0",
        "Succeeded",
        "TFJob Succeeded, PodGroup deleted, pods Completed",
    ),
    "worker-failure": Experiment(
        "worker-failure",
        "tftest-worker-0 exits 1 after 10s, every other pod sleeps 30s",
        "Failed",
        "TFJob Failed by backoffLimit 3, PodGroup and all pods deleted",
    ),
    "ps-failure": Experiment(
        "ps-failure",
        "the PS exits 1 after 15s, the workers sleep 30s",
        "Succeeded",
        "TFJob Succeeded, PodGroup deleted, workers Completed, tftest-ps-0 still restarting",
    ),
}

_SLEEP: Final = re.compile(r"\bsleep (\d+(?:\.\d+)?)s\b")


def seed_dir() -> Path:
    """``examples/seed`` of the source tree this package runs from, else of the working directory."""
    for root in (Path(__file__).resolve().parents[1], Path.cwd()):
        candidate = root / "examples" / "seed"
        if candidate.is_dir():
            return candidate
    raise SeedError("examples/seed not found: run the demo from a clone of the tfgang repository")


def shorten_manifest(text: str, speed: float) -> str:
    """The manifest with every ``sleep Ns`` divided by ``speed`` (1 leaves it verbatim)."""
    if speed <= 0:
        raise ValueError(f"speed must be positive, not {speed}")
    if speed == 1:
        return text

    def shorter(match: re.Match[str]) -> str:
        return f"sleep {float(match.group(1)) / speed:g}s"

    return _SLEEP.sub(shorter, text)


def backoff_base_for(speed: float) -> float:
    """The node agent's first back-off for a replay ``speed`` times faster than the transcript.

    The transcript's kubelet restarted worker-0 about 2 s after its 10 s back-off ran out (kubelet
    sync latency), and that is what put worker-0's second restart after the PS's first. The
    sandbox's node agent has no such latency, so a shortened replay keeps those 2 s unscaled.
    """
    if speed <= 0:
        raise ValueError(f"speed must be positive, not {speed}")
    return 10.0 / speed + 2.0 * (1.0 - 1.0 / speed)


@dataclass(frozen=True)
class ExperimentRecord:
    experiment: str
    streams: dict[str, list[str]]
    """kubectl's lines (header first) per watch: ``tfjob``, ``podgroup``, ``po``."""
    environment: list[str]
    reached: bool
    missing: list[str]
    seconds: float
    arrivals: dict[str, list[float]]
    """Per watch, the seconds since the apply at which each of its data lines (no header) arrived."""


def _job_identity(manifest: str) -> tuple[str, str]:
    try:
        document = yaml.safe_load(manifest)
    except yaml.YAMLError as error:
        raise SeedError(f"the manifest is not YAML: {error}") from error
    meta = document.get("metadata") if isinstance(document, dict) else None
    if not isinstance(meta, dict) or not meta.get("name"):
        raise SeedError("the manifest has no metadata.name")
    return str(meta["name"]), str(meta.get("namespace") or "default")


def _last_state(job: dict[str, Any]) -> str:
    conditions = (job.get("status") or {}).get("conditions") or []
    return str(conditions[-1].get("type", "")) if conditions else ""


def _pod_rows(stream: WatchStream) -> list[PodRow]:
    rows = []
    for line in stream.lines:
        try:
            rows.append(parse_pod_row(line.text))
        except RowError:
            continue
    return rows


def _tfjob_states(stream: WatchStream) -> list[str]:
    states = []
    for line in stream.lines:
        try:
            states.append(parse_tfjob_row(line.text).state)
        except RowError:
            continue
    return states


class SeedReplay:
    """Replays experiments on ``cluster``; ``async with`` gives it its own API identity."""

    def __init__(
        self, cluster: LocalCluster, kubectl_binary: str, emit: Emit, timeout: float = 180.0
    ) -> None:
        self._cluster = cluster
        self._kubectl = kubectl_binary
        self._emit = emit
        self._timeout = timeout
        self._api: KubeApi | None = None
        self._viewers = 0

    async def __aenter__(self) -> SeedReplay:
        self._api = KubeApi(await make_api_client(str(await self._kubeconfig_for("tfgang-demo"))))
        return self

    async def __aexit__(self, *_exc: object) -> None:
        if self._api is not None:
            await self._api.close()
            self._api = None

    @property
    def api(self) -> KubeApi:
        if self._api is None:
            raise RuntimeError("use SeedReplay in an async with block")
        return self._api

    async def _kubeconfig_for(self, user: str) -> Path:
        return await self._cluster.identity_kubeconfig(user, user)

    async def _lists_by(self, user: str, plural: str) -> int:
        records = await self._cluster.request_log()
        return sum(1 for r in records if r.user == user and r.resource == plural and r.verb == "list")

    async def _start_watch(self, resource: str, plural: str) -> WatchStream:
        """A watch whose initial list has been answered, so no later change can be missed."""
        self._viewers += 1
        user = f"kubectl-watch-{resource}-{self._viewers}"
        stream = WatchStream(
            self._kubectl, await self._kubeconfig_for(user), resource, LABELS[resource], self._emit
        )
        await stream.start()
        async with asyncio.timeout(30):
            while await self._lists_by(user, plural) == 0:
                if not stream.running:
                    await stream.stop()
                    raise KubectlError(f"kubectl get {resource} -w exited: {stream.stderr.strip()}")
                await asyncio.sleep(0.05)
        return stream

    async def run(self, experiment: Experiment, manifest: str, source: str) -> ExperimentRecord:
        job, namespace = _job_identity(manifest)
        self._emit(f"==> {experiment.name}: {experiment.what}")
        self._emit("==> starting kubectl get tfjob -owide -w, get podgroup -owide -w, get po -owide -w")
        streams = {resource: await self._start_watch(resource, plural) for resource, plural in STREAMS}
        started = time.monotonic()
        try:
            self._emit(f"==> kubectl apply -f {source}")
            applied = await kubectl(
                self._kubectl, self._cluster.kubeconfig, ["apply", "-f", "-"], stdin=manifest
            )
            for line in (applied.stdout + applied.stderr).splitlines():
                self._emit(f"apply    | {line}")
            if applied.code != 0:
                raise KubectlError(f"kubectl apply failed: {applied.stderr.strip()}")
            self._emit(f"==> waiting for the final state: {experiment.final_state}")
            missing = await self._await_final_state(experiment, job, namespace, streams)
            await asyncio.sleep(SETTLE_SECONDS)
        finally:
            for stream in streams.values():
                await stream.stop()
        seconds = time.monotonic() - started
        if missing:
            self._emit(f"==> {experiment.name}: NOT reached after {seconds:.0f}s: {'; '.join(missing)}")
        else:
            self._emit(f"==> {experiment.name}: final state reached after {seconds:.0f}s")
        environment = await self._environment(f"{job}-ps-0", namespace)
        return ExperimentRecord(
            experiment=experiment.name,
            streams={
                resource: [stream.header, *(line.text for line in stream.lines)]
                for resource, stream in streams.items()
            },
            arrivals={
                resource: [line.at - started for line in stream.lines] for resource, stream in streams.items()
            },
            environment=environment,
            reached=not missing,
            missing=missing,
            seconds=seconds,
        )

    async def _await_final_state(
        self, experiment: Experiment, job: str, namespace: str, streams: dict[str, WatchStream]
    ) -> list[str]:
        deadline = time.monotonic() + self._timeout
        report_at = time.monotonic() + 15
        while True:
            self._cluster.check()
            missing = await self._missing(experiment, job, namespace, streams)
            if not missing or time.monotonic() > deadline:
                return missing
            if time.monotonic() > report_at:
                more = f" (and {len(missing) - 2} more)" if len(missing) > 2 else ""
                self._emit(f"==> still waiting: {'; '.join(missing[:2])}{more}")
                report_at = time.monotonic() + 15
            await asyncio.sleep(0.2)

    async def _missing(
        self, experiment: Experiment, job: str, namespace: str, streams: dict[str, WatchStream]
    ) -> list[str]:
        missing: list[str] = []
        try:
            tfjob = await self.api.get(TFJOBS, job, namespace)
        except NotFound:
            return [f"TFJob {job} does not exist"]
        state = _last_state(tfjob)
        if state != experiment.outcome:
            missing.append(f"TFJob state {state or '(none)'}, not {experiment.outcome}")
        if experiment.outcome not in _tfjob_states(streams["tfjob"]):
            missing.append(f"the tfjob watch has not shown {experiment.outcome}")
        try:
            await self.api.get(PODGROUPS_V1BETA1, job, namespace)
            missing.append(f"PodGroup {job} still exists")
        except NotFound:
            pass
        listed = await self.api.list(PODS, namespace, label_selector=f"{JOB_NAME_LABEL}={job}")
        pods = {pod["metadata"]["name"]: pod for pod in listed.get("items") or ()}
        rows = _pod_rows(streams["po"])
        if experiment.name == "worker-failure":
            conditions = (tfjob.get("status") or {}).get("conditions") or []
            message = str(conditions[-1].get("message", "")) if conditions else ""
            if state == "Failed" and "backoff limit" not in message:
                missing.append(f"the job failed, but not by its backoff limit: {message!r}")
            if pods:
                missing.append(f"pods left: {', '.join(sorted(pods))}")
            return missing
        for index in range(3):
            name = f"{job}-worker-{index}"
            phase = (pods.get(name, {}).get("status") or {}).get("phase", "missing")
            if phase != "Succeeded":
                missing.append(f"{name} is {phase}, not Completed")
        ps = f"{job}-ps-0"
        if ps not in pods:
            missing.append(f"{ps} is gone")
        elif experiment.name == "normal":
            if not any(row.name == ps and row.status == "Completed" for row in rows):
                missing.append(f"{ps} has not shown Completed")
        elif not any(row.name == ps and row.status == "Running" and row.restarts >= 2 for row in rows):
            missing.append(f"{ps} has not shown Running after a second restart")
        return missing

    async def _environment(self, pod: str, namespace: str) -> list[str]:
        described = await kubectl(
            self._kubectl, self._cluster.kubeconfig, ["describe", "po", pod, "-n", namespace]
        )
        if described.code != 0:
            self._emit(f"==> {pod} is gone with the job; no Environment to show")
            return []
        self._emit(f"==> kubectl describe po {pod} (its Environment)")
        section = environment_section(described.stdout)
        for line in section:
            self._emit(f"describe | {line}")
        return section

    async def delete_job(self, manifest: str) -> None:
        """Delete the experiment's TFJob and wait until its pods, services and PodGroup are gone."""
        job, namespace = _job_identity(manifest)
        self._emit(f"==> kubectl delete tfjob {job}, then waiting for its pods, services and PodGroup to go")
        deleted = await kubectl(
            self._kubectl,
            self._cluster.kubeconfig,
            ["delete", "tfjob", job, "-n", namespace, "--ignore-not-found"],
        )
        if deleted.code != 0:
            raise KubectlError(f"kubectl delete failed: {deleted.stderr.strip()}")
        selector = f"{JOB_NAME_LABEL}={job}"

        async def leftovers() -> list[str]:
            left = []
            for resource in (PODS, SERVICES):
                listed = await self.api.list(resource, namespace, label_selector=selector)
                left += [f"{resource.kind} {item['metadata']['name']}" for item in listed.get("items") or ()]
            for resource in (TFJOBS, PODGROUPS_V1BETA1):
                try:
                    await self.api.get(resource, job, namespace)
                    left.append(f"{resource.kind} {job}")
                except NotFound:
                    pass
            return left

        await self._until_empty(leftovers)

    async def _until_empty(self, leftovers: Callable[[], Awaitable[list[str]]]) -> None:
        deadline = time.monotonic() + 60
        while left := await leftovers():
            self._cluster.check()
            if time.monotonic() > deadline:
                raise KubectlError(f"still there a minute after the delete: {', '.join(left)}")
            await asyncio.sleep(0.2)
