"""The integration suite's pod scenarios with real containers: the kubelet, not the test, runs the
pods, stops them with SIGTERM and reports their ends; tfgang is the helm-installed release.

From ``tests/integration``: suspend and resume, cleanPodPolicy All and the TTL after finishing
(test_job_lifecycle), a pod deleted by someone else recreated and not counted a failure
(test_decisions, D4), a collective's worker evicted through the Eviction API restarting the whole
gang (test_disruptions, D18); and what only a node shows: the replicas find each other by the
headless Services' DNS names that ``TF_CONFIG`` lists.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from realcluster.helmrelease import Release
from tests.realnode.installed.podview import apply, job_state, small_job, until

pytestmark = [pytest.mark.real_node, pytest.mark.timeout(240)]

# Ends on SIGTERM at once (a shell as PID 1 ignores it otherwise), as the seed's commands do.
SLEEP = "trap 'exit 143' INT TERM; sleep {seconds} & wait"


@pytest.fixture
def namespace(tfgang: Release) -> Iterator[str]:
    name = f"pods-{uuid.uuid4().hex[:6]}"
    tfgang.run(["kubectl", "create", "namespace", name])
    try:
        yield name
    finally:
        tfgang.run(["kubectl", "delete", "namespace", name, "--wait=false"], check=False)


def _job(release: Release, namespace: str, name: str) -> dict[str, Any]:
    return release.kubectl_json("-n", namespace, "get", "tfjob", name)


def _condition(job: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for entry in (job.get("status") or {}).get("conditions") or ():
        if entry.get("type") == kind:
            return dict(entry)
    return None


def _pods(release: Release, namespace: str, job: str) -> dict[str, dict[str, Any]]:
    listed = release.kubectl_json(
        "-n", namespace, "get", "pods", "-l", f"training.kubeflow.org/job-name={job}"
    )
    return {pod["metadata"]["name"]: pod for pod in listed["items"]}


def _running_pods(release: Release, namespace: str, job: str, count: int) -> dict[str, str] | None:
    """The job's pods by name and uid once ``count`` of them run, none terminating."""
    pods = _pods(release, namespace, job)
    running = {
        name: pod["metadata"]["uid"]
        for name, pod in pods.items()
        if pod["status"].get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")
    }
    return running if len(running) == count == len(pods) else None


def test_suspend_stops_the_containers_and_resume_starts_them_again(tfgang: Release, namespace: str) -> None:
    apply(tfgang, small_job("nap", namespace, SLEEP.format(seconds=300), workers=2))
    first = until(lambda: _running_pods(tfgang, namespace, "nap", 2), 90, "nap's two pods running")

    tfgang.run(["kubectl", "-n", namespace, "patch", "tfjob", "nap", "--type=merge",
                "-p", json.dumps({"spec": {"runPolicy": {"suspend": True}}})])  # fmt: skip
    until(lambda: job_state(tfgang, namespace, "nap") == "Suspended", 60, "nap Suspended")
    until(lambda: not _pods(tfgang, namespace, "nap"), 60, "nap's pods stopped and removed by the kubelet")

    tfgang.run(["kubectl", "-n", namespace, "patch", "tfjob", "nap", "--type=merge",
                "-p", json.dumps({"spec": {"runPolicy": {"suspend": False}}})])  # fmt: skip
    second = until(lambda: _running_pods(tfgang, namespace, "nap", 2), 90, "nap's pods running again")
    assert sorted(second) == sorted(first)
    assert not set(second.values()) & set(first.values())
    suspended = _condition(_job(tfgang, namespace, "nap"), "Suspended")
    assert suspended is not None and suspended["status"] == "False" and suspended["reason"] == "TFJobResumed"


def test_a_finished_job_cleans_its_running_ps_and_is_deleted_after_its_ttl(
    tfgang: Release, namespace: str
) -> None:
    job = small_job(
        "tidy", namespace, SLEEP.format(seconds=5), ps=1,
        run_policy={"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 10},
    )  # fmt: skip
    job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["command"][-1] = SLEEP.format(
        seconds=300
    )
    apply(tfgang, job)
    until(lambda: job_state(tfgang, namespace, "tidy") == "Succeeded", 120, "tidy Succeeded")
    # cleanPodPolicy All: the PS, still running, is stopped and removed with the worker.
    until(lambda: not _pods(tfgang, namespace, "tidy"), 60, "every pod of the finished job removed")

    def deleted() -> bool:
        listed = tfgang.kubectl_json("-n", namespace, "get", "tfjobs")
        return not listed["items"]

    until(deleted, 60, "the job deleted by its TTL")


def test_a_pod_deleted_by_someone_else_is_recreated_not_failed(tfgang: Release, namespace: str) -> None:
    job = small_job("lost", namespace, SLEEP.format(seconds=20), workers=2)
    # Per replica: a job without PS would restart as a whole gang instead (D18).
    job["metadata"]["annotations"] = {"tfgang.io/gang-restart": "false"}
    apply(tfgang, job)
    first = until(lambda: _running_pods(tfgang, namespace, "lost", 2), 90, "lost's two pods running")

    # What a user's `kubectl delete pod` does: SIGTERM from the kubelet, exit 143, pod removed.
    tfgang.run(["kubectl", "-n", namespace, "delete", "pod", "lost-worker-1"])
    second = until(lambda: _running_pods(tfgang, namespace, "lost", 2), 90, "lost-worker-1 recreated")
    assert second["lost-worker-0"] == first["lost-worker-0"]
    assert second["lost-worker-1"] != first["lost-worker-1"]
    assert _condition(_job(tfgang, namespace, "lost"), "Failed") is None

    until(lambda: job_state(tfgang, namespace, "lost") == "Succeeded", 90, "lost Succeeded")


def test_a_collective_whose_worker_is_evicted_restarts_as_a_gang(tfgang: Release, namespace: str) -> None:
    apply(
        tfgang,
        small_job("evicted", namespace, SLEEP.format(seconds=20), workers=2, run_policy={"backoffLimit": 0}),
    )
    first = until(lambda: _running_pods(tfgang, namespace, "evicted", 2), 90, "evicted's pods running")

    eviction = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": "evicted-worker-1", "namespace": namespace}}  # fmt: skip
    tfgang.run(
        ["kubectl", "create", "--raw", f"/api/v1/namespaces/{namespace}/pods/evicted-worker-1/eviction",
         "-f", "-"],
        input_text=json.dumps(eviction),
    )  # fmt: skip

    def restarting() -> dict[str, Any] | None:
        found = _job(tfgang, namespace, "evicted")
        restart = _condition(found, "Restarting")
        return found if restart and restart.get("reason") == "EvictionByEvictionAPI" else None

    job = until(restarting, 60, "evicted Restarting after the eviction")
    assert "pod evicted-worker-1 was disrupted (EvictionByEvictionAPI)" in str(
        (_condition(job, "Restarting") or {}).get("message")
    )
    second = until(lambda: _running_pods(tfgang, namespace, "evicted", 2), 120, "the gang running again")
    assert not set(second.values()) & set(first.values()), "the whole gang restarts, not one worker"

    until(lambda: job_state(tfgang, namespace, "evicted") == "Succeeded", 90, "evicted Succeeded")
    done = _job(tfgang, namespace, "evicted")
    assert done["status"]["disruptions"] == 1
    assert _condition(done, "Failed") is None


def test_replicas_find_each_other_by_the_names_in_tf_config(tfgang: Release, namespace: str) -> None:
    # Each worker prints its own address, then resolves every address TF_CONFIG lists (the headless
    # Services' names, through the resolver and search path of its container, as TensorFlow does)
    # until all answer, and stays a few seconds (a name resolves only while its pod is ready); it
    # exits 1 if a name never resolves. ping prints the address it resolved, replies or not.
    script = (
        'echo "me $(hostname -i)"; '
        'for name in $(echo "$TF_CONFIG" | tr \'"[],\' "\\n\\n\\n\\n" | grep "\\.svc:2222$"); do '
        "host=${name%:2222}; tries=0; "
        'until ping -c 1 -W 1 "$host" 2>&1 | head -n 1 | grep -q "^PING"; do tries=$((tries+1)); '
        '[ $tries -gt 60 ] && { ping -c 1 -W 1 "$host"; exit 1; }; sleep 1; done; '
        'ping -c 1 -W 1 "$host" 2>&1 | head -n 1; done; sleep 5'
    )
    apply(tfgang, small_job("dns", namespace, script, workers=2))

    def both_ended() -> dict[str, str] | None:
        pods = _pods(tfgang, namespace, "dns")
        phases = {name: pod["status"].get("phase", "") for name, pod in pods.items()}
        return phases if len(phases) == 2 and set(phases.values()) <= {"Succeeded", "Failed"} else None

    phases = until(both_ended, 150, "both dns workers ended")
    logs = {name: tfgang.run(["kubectl", "-n", namespace, "logs", name]).stdout for name in phases}
    assert set(phases.values()) == {"Succeeded"}, logs
    assert job_state(tfgang, namespace, "dns") == "Succeeded"
    addresses = {name: log.split("me ", 1)[1].split()[0] for name, log in logs.items()}
    for name, log in logs.items():
        for other, address in addresses.items():
            assert f"PING {other}.{namespace}.svc ({address})" in log, f"{name}:\n{log}"
