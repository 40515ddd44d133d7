"""The helm-installed webhook under TFJob pod creations at 25 a second, through kube-apiserver on the
node (the loopback port of its kubeconfig), with the upgrade rig's load and counters
(``tests/chaos/upgrade_rig.Load``): every pod labelled and owned as the controller makes them, its
mutation checked, then deleted again.

- ``helm upgrade`` to another image tag: the kubelet rolls the webhook (maxSurge 1, maxUnavailable
  0, SIGTERM through the shutdown delay, endpoints removed by the EndpointSlice controller and
  kube-proxy): not one admission may fail.
- a webhook pod deleted with ``--grace-period=0 --force``: the API forgets the pod at once, while
  its container is still stopped by the kubelet; what fails is counted by reason, and every
  failure must be one such a cut explains.

The load's TFJob is suspended, so the controller makes no pods or PodGroup of its own for it (and
Volcano's pod admission, which refuses pods of a Pending PodGroup, has none to look at).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import copy
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from controller.resources import TFJOBS
from kube.api import KubeApi
from kube.errors import AlreadyExists
from kube.resources import NAMESPACES
from realcluster.helmrelease import CONTROLLER, NAMESPACE, WEBHOOK, Image, Release, ReleaseError
from realcluster.onenode import OneNode
from tests.chaos.upgrade_rig import LOAD_NAMESPACE, SEED, CreateRecord, Load, RigOptions
from tests.realnode.installed.podview import pods_of

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.real_node, pytest.mark.timeout(420)]

RATE = 25.0
MINIMUM_RATE = 20.0
STEADY_SECONDS = 5.0
SETTLE_SECONDS = 5.0

# What a webhook replica that vanishes mid-request makes kube-apiserver answer, by the words of
# its error; anything else is a failure this test cannot explain.
CUT_SHORT = {
    "EOF": "the connection closed mid-review (EOF)",
    "connection reset by peer": "the connection reset mid-review",
    "connection refused": "a new connection refused (the pod's address still routed)",
    "no route to host": "no route to the pod's address (still routed)",
    "i/o timeout": "the connection to the pod's address timed out (still routed)",
    "context deadline exceeded": "no answer within the webhook's timeoutSeconds",
    "no endpoints available": "no ready endpoint for the Service",
}


def reason_of(record: CreateRecord) -> str:
    if record.outcome == "not mutated":
        return "created without the mutation"
    if record.outcome == "timed out":
        return "timed out"
    for words, reason in CUT_SHORT.items():
        if words in record.message:
            return reason
    return f"unexplained: {record.message[:200]}"


def failures_by_reason(records: list[CreateRecord]) -> dict[str, int]:
    return dict(collections.Counter(reason_of(record) for record in records if record.outcome != "created"))


async def _load_job(api: KubeApi) -> dict[str, Any]:
    with_namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LOAD_NAMESPACE}}
    with contextlib.suppress(AlreadyExists):
        await api.create(NAMESPACES, with_namespace)
    # The seed's TFJob, whose name the load's pods carry in their job-name label.
    tfjob = copy.deepcopy(SEED.tfjobs[0])
    for key in ("uid", "resourceVersion", "generation", "creationTimestamp"):
        tfjob["metadata"].pop(key, None)
    tfjob["metadata"]["namespace"] = LOAD_NAMESPACE
    tfjob.pop("status", None)
    tfjob["spec"].setdefault("runPolicy", {})["suspend"] = True
    try:
        return await api.create(TFJOBS, tfjob, LOAD_NAMESPACE)
    except AlreadyExists:  # made by the test before
        return await api.get(TFJOBS, tfjob["metadata"]["name"], LOAD_NAMESPACE)


async def under_load(api: KubeApi, name: str, action: Callable[[], Awaitable[None]]) -> tuple[Load, float]:
    """Steady load, then ``action`` under it (step ``name``), then a settling while: the load, and
    the seconds the action took."""
    load = Load(api, await _load_job(api), RigOptions(rate=RATE, request_timeout=30.0))
    stop = asyncio.Event()
    load.step("steady")
    running = asyncio.create_task(load.run(stop))
    try:
        await asyncio.sleep(STEADY_SECONDS)
        step = load.step(name)
        started = time.monotonic()
        await action()
        step.seconds = seconds = time.monotonic() - started
        load.step("settling")
        await asyncio.sleep(SETTLE_SECONDS)
    finally:
        stop.set()
        await running
    return load, seconds


def _report(
    factory: pytest.TempPathFactory, name: str, load: Load, seconds: float, **more: Any
) -> dict[str, Any]:
    """The figures, logged and written to ``<basetemp>/<name>.json``."""
    steps = [
        {
            "name": step.name,
            "seconds": round(step.seconds, 1),
            "creations": step.creations,
            "created": step.created,
            "failed": step.failed,
            "timed out": step.timed_out,
            "not mutated": step.not_mutated,
            "longest": round(step.longest_seconds, 2),
            "errors": step.errors,
        }
        for step in load.steps
    ]
    figures = {
        "action seconds": round(seconds, 1),
        "steps": steps,
        "failures by reason": failures_by_reason(load.records),
        **more,
    }
    text = json.dumps(figures, indent=2)
    Path(factory.getbasetemp() / f"{name}.json").write_text(text)
    logger.warning("%s: %s", name, text)
    return figures


def _rate_held(load: Load, step_name: str) -> float:
    (step,) = [step for step in load.steps if step.name == step_name]
    return step.creations / step.seconds if step.seconds else 0.0


def _upgrade_image(release: Release, node: OneNode) -> Image:
    """The second tfgang tag of scripts/real-images, else the first image imported under another tag
    (the upgrade is the chart's rolling of a new image name; the bytes may well be the same)."""
    try:
        return release.images.tfgang_upgrade
    except ReleaseError:
        first = release.images.tfgang
        new = Image(first.repository, f"{first.tag}-upgrade", first.archive)
        node.import_image(first.archive, new.name)
        return new


async def test_helm_upgrade_to_a_new_image_under_load_fails_no_admission(
    tfgang: Release, one_node: OneNode, node_api: KubeApi, tmp_path_factory: pytest.TempPathFactory
) -> None:
    new = _upgrade_image(tfgang, one_node)

    async def upgrade() -> None:
        await asyncio.to_thread(tfgang.upgrade, "--set", f"image.tag={new.tag}")
        await asyncio.to_thread(tfgang.wait_rolled_out)

    load, seconds = await under_load(node_api, "helm upgrade", upgrade)
    figures = _report(tmp_path_factory, "helm-upgrade-under-load", load, seconds)
    assert _rate_held(load, "helm upgrade") >= MINIMUM_RATE, figures
    assert figures["failures by reason"] == {}, figures
    for component in ("webhook", "controller"):
        images = {pod["spec"]["containers"][0]["image"] for pod in pods_of(tfgang, component)}
        assert images == {new.name}, f"{component} runs {images}"
    assert {d: _ready(tfgang, d) for d in (WEBHOOK, CONTROLLER)} == {WEBHOOK: 2, CONTROLLER: 2}


def _grace_given(node: OneNode, pod: str) -> list[int]:
    """The grace periods the kubelet gave ``pod``'s containers when it stopped them (its log)."""
    log = (node.log_dir / "kubelet.log").read_text(errors="replace")
    return [
        int(match.group(1))
        for line in log.splitlines()
        if "Killing container with a grace period" in line and f'pod="{NAMESPACE}/{pod}"' in line
        for match in [re.search(r"gracePeriod=(\d+)", line)]
        if match
    ]


async def test_a_webhook_pod_force_deleted_under_load(
    tfgang: Release, one_node: OneNode, node_api: KubeApi, tmp_path_factory: pytest.TempPathFactory
) -> None:
    victim = pods_of(tfgang, "webhook")[0]["metadata"]["name"]

    async def force_delete() -> None:
        await asyncio.to_thread(
            tfgang.run, ["kubectl", "-n", NAMESPACE, "delete", "pod", victim, "--grace-period=0", "--force"]
        )
        # Its replacement ready, as the Deployment's controller and the kubelet bring it.
        await asyncio.to_thread(tfgang.wait_rolled_out)

    load, seconds = await under_load(node_api, "webhook pod force-deleted", force_delete)
    # Why so little fails: the API forgets the pod at once (its endpoint goes with it), but the
    # kubelet still stops the container with SIGTERM, and a grace of its own minimum (2 s) instead
    # of the pod's, during which the webhook answers with Connection: close.
    grace = _grace_given(one_node, victim)
    figures = _report(tmp_path_factory, "webhook-force-deleted-under-load", load, seconds, grace=grace)
    assert grace == [2], f"the kubelet stopped {victim} with grace {grace}"
    assert _rate_held(load, "webhook pod force-deleted") >= MINIMUM_RATE, figures
    failures = figures["failures by reason"]
    assert not [reason for reason in failures if reason.startswith("unexplained")], failures
    assert "created without the mutation" not in failures, "failurePolicy Fail let a pod through unmutated"
    assert victim not in {pod["metadata"]["name"] for pod in pods_of(tfgang, "webhook")}
    assert _ready(tfgang, WEBHOOK) == 2


def _ready(release: Release, deployment: str) -> int:
    found = release.kubectl_json("-n", NAMESPACE, "get", "deployment", deployment)
    return int((found.get("status") or {}).get("readyReplicas") or 0)
