"""``kubectl tfjob status`` on the sandbox with the real controller and webhook: a job waiting for its
gang, then running with restarts, read by the plugin through real kubectl's plugin discovery."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from kube.patches import PatchType
from kube.resources import PODGROUPS_V1BETA1
from tests.kubectl_tfjob.plugin import plugin, via_kubectl

from .cluster import Cluster, admit_and_wait_for_pods, eventually, simple_job, wait_for_state
from .operator import controller_config, running_controller

UNSCHEDULABLE = "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable"


async def _status(
    *args: str, kubectl: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # In a thread: the controller runs on this event loop.
    return await asyncio.to_thread(via_kubectl if kubectl else plugin, "status", *args, env=env)


async def _json_status(*args: str) -> dict[str, Any]:
    result = await _status(*args, "-o", "json")
    assert result.returncode == 0, result.stderr
    view: dict[str, Any] = json.loads(result.stdout)
    return view


async def test_status_shows_the_gang_wait_then_restarts_and_deadline_of_the_running_job(
    cluster: Cluster, controller_kubeconfig: str, apiserver: Any
) -> None:
    ns, kc = cluster.namespace, str(apiserver.kubeconfig)
    run_policy = {
        "backoffLimit": 3,
        "activeDeadlineSeconds": 600,
        "schedulingPolicy": {"scheduleTimeoutSeconds": 300},
    }
    job = simple_job("st", ns, workers=2, restart_policy="OnFailure", run_policy=run_policy)
    async with running_controller(controller_kubeconfig, controller_config(namespace=ns)):
        await cluster.create_job(job)
        await eventually(lambda: cluster.podgroup("st"), what="PodGroup st")
        # What Volcano writes for a gang it cannot place.
        unschedulable = {
            "type": "Unschedulable",
            "status": "True",
            "reason": "NotEnoughResources",
            "message": UNSCHEDULABLE,
            "transitionID": "t1",
            "lastTransitionTime": "2026-12-01T10:00:00Z",
        }
        await cluster.api.patch(
            PODGROUPS_V1BETA1,
            "st",
            {"status": {"phase": "Pending", "conditions": [unschedulable]}},
            ns,
            patch_type=PatchType.MERGE,
        )
        await wait_for_state(cluster, "st", "Created")

        waiting = await _json_status("st", "-n", ns, "--kubeconfig", kc)
        assert waiting["state"] == "Created"
        assert [(c["type"], c["reason"]) for c in waiting["conditions"]] == [("Created", "TFJobCreated")]
        gang = waiting["gang"]
        assert (gang["phase"], gang["admitted"], gang["minMember"], gang["queue"]) == (
            "Pending",
            False,
            2,
            "default",
        )
        assert gang["conditions"][0]["message"] == UNSCHEDULABLE
        assert gang["scheduleTimeout"]["seconds"] == 300
        assert 0 < gang["scheduleTimeout"]["remaining"] <= 300
        assert waiting["restarts"] == {"counted": 0, "backoffLimit": 3}
        assert "activeDeadline" not in waiting  # not started: the clock has not begun
        assert waiting["pods"] == []

        text = await _status("st", "-n", ns, "--kubeconfig", kc, kubectl=True)
        assert text.returncode == 0, text.stderr
        assert (
            "PodGroup st: phase Pending, minMember 2, minTaskMember {worker=2}, queue default "
            "(waiting for the gang scheduler)" in text.stdout
        )
        assert f"Unschedulable=True NotEnoughResources: {UNSCHEDULABLE}" in text.stdout
        assert "schedule timeout: 300s" in text.stdout

        names = await admit_and_wait_for_pods(cluster, "st", 2)
        await cluster.run_pods(names, restart_count=1)
        await wait_for_state(cluster, "st", "Running")

        async def counted() -> dict[str, Any] | None:
            view = await _json_status("st", "-n", ns, "--kubeconfig", kc)
            return view if view["replicaStatuses"].get("Worker", {}).get("active") == 2 else None

        running = await eventually(counted, what="both workers active in the status")
        assert running["state"] == "Running"
        assert running["restarts"] == {"counted": 2, "backoffLimit": 3}
        assert running["activeDeadline"]["seconds"] == 600
        assert 0 < running["activeDeadline"]["remaining"] <= 600
        assert running["gang"]["admitted"] is True and "scheduleTimeout" not in running["gang"]
        assert [(p["name"], p["phase"], p["restarts"]) for p in running["pods"]] == [
            ("st-worker-0", "Running", 1),
            ("st-worker-1", "Running", 1),
        ]
        as_yaml = await _status("st", "-n", ns, "--kubeconfig", kc, "-o", "yaml", kubectl=True)
        assert yaml.safe_load(as_yaml.stdout)["restarts"] == {"counted": 2, "backoffLimit": 3}
        text = await _status("st", "-n", ns, "--kubeconfig", kc)
        assert "Restarts: 2 of backoffLimit 3" in text.stdout
        assert "Running=True" in text.stdout


async def test_status_takes_the_namespace_from_the_context_and_reports_missing_things(
    cluster: Cluster, apiserver: Any, tmp_path: Path
) -> None:
    ns = cluster.namespace
    await cluster.create_job(simple_job("ctx", ns))
    config = yaml.safe_load(await asyncio.to_thread(Path(apiserver.kubeconfig).read_text))
    config["contexts"][0]["context"]["namespace"] = ns
    config["contexts"].append(
        {"name": "other", "context": dict(config["contexts"][0]["context"], namespace="default")}
    )
    kubeconfig = tmp_path / "kc"
    await asyncio.to_thread(kubeconfig.write_text, yaml.safe_dump(config))

    from_context = await _status("ctx", env={"KUBECONFIG": str(kubeconfig)})
    assert from_context.returncode == 0, from_context.stderr
    assert from_context.stdout.startswith(f"TFJob {ns}/ctx:")
    elsewhere = await _status("ctx", "--kubeconfig", str(kubeconfig), "--context", "other")
    assert elsewhere.returncode == 1 and 'tfjobs.kubeflow.org "ctx" not found' in elsewhere.stderr
    no_context = await _status("ctx", "--kubeconfig", str(kubeconfig), "--context", "nope")
    assert no_context.returncode == 1 and "context 'nope' does not exist" in no_context.stderr
    no_file = await _status("ctx", env={"KUBECONFIG": str(tmp_path / "missing")})
    assert no_file.returncode == 1 and "none of the files in KUBECONFIG exists" in no_file.stderr
