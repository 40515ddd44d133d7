"""The TensorFlow example trains under tfgang on the one-node cluster: real TensorFlow processes in
real containers, finding each other by the Service names of the TF_CONFIG tfgang wrote, and a
collective that loses a worker restarted as a gang that resumes from its last checkpoint (D18)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tensorflow.onnode import (
    STATED_ACCURACY,
    Cluster,
    condition,
    example_job,
    service_addresses,
    wait_epoch,
    wait_finished,
    worker_pods,
)
from tests.tensorflow.trainlog import epochs_run_twice, runs

# The first test also waits for the node, the release and the image import (about 3 minutes here).
pytestmark = [pytest.mark.tensorflow, pytest.mark.timeout(900)]

EPOCHS = 10
FINISH_TIMEOUT = 420.0


def _plugin(cluster: Cluster, *args: str) -> str:
    """``kubectl tfjob ARGS`` as a user runs it (the plugin's console script)."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "kubectl-tfjob"), "--kubeconfig", cluster.kubeconfig, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_collective_job_finds_its_workers_by_service_name_trains_and_succeeds(
    example_cluster: Cluster, checkpoints: Path
) -> None:
    name, workers = "tf-collective", 3
    example_cluster.submit(example_job("collective.yaml", name, checkpoints))
    try:
        job = wait_finished(example_cluster, name, FINISH_TIMEOUT)
        assert condition(job, "Succeeded"), job["status"]
        assert not condition(job, "Failed")
        addresses = service_addresses(name, "worker", workers)
        for index, pod in enumerate(worker_pods(name, workers)):
            (run,) = runs(example_cluster.log(pod))
            # What TensorFlow's resolver read from tfgang's TF_CONFIG: this task, every worker.
            assert (run.task_type, run.task_index) == ("worker", str(index))
            assert run.cluster == {"worker": addresses}
            assert (run.first_epoch, run.resumed, run.epochs_run) == (1, False, EPOCHS)
            assert [epoch.number for epoch in run.epochs] == list(range(1, EPOCHS + 1))
            assert run.test_accuracy is not None and run.test_accuracy >= STATED_ACCURACY, run
        # As a user reads it: the plugin's status and the chief's log.
        status = _plugin(example_cluster, "status", name)
        assert "Succeeded" in status, status
        log = _plugin(example_cluster, "logs", name)  # worker 0: the chief of a collective
        (run,) = runs(log)
        assert run.task_index == "0" and run.finished, log[-2000:]
        assert _plugin(example_cluster, "logs", name, "--replica", "worker-2").count("event=epoch ") == EPOCHS
        # BackupAndRestore removes its checkpoint once training is done: nothing left to resume from.
        assert not list((checkpoints / name).glob("**/*.index"))
    finally:
        example_cluster.delete_job(name)


def test_parameter_server_job_trains_on_its_chief_and_succeeds(
    example_cluster: Cluster, checkpoints: Path
) -> None:
    name = "tf-ps"
    example_cluster.submit(example_job("parameter-server.yaml", name, checkpoints))
    try:
        # PS and workers serve until the chief is done; cleanPodPolicy Running removes them then,
        # so their logs are read while the chief trains.
        wait_epoch(example_cluster, f"{name}-chief-0", 1, FINISH_TIMEOUT)
        cluster = {
            "chief": service_addresses(name, "chief", 1),
            "ps": service_addresses(name, "ps", 1),
            "worker": service_addresses(name, "worker", 2),
        }
        for pod, task in ((f"{name}-ps-0", ("ps", "0")), (f"{name}-worker-1", ("worker", "1"))):
            log = example_cluster.log(pod)
            (run,) = runs(log)
            assert ((run.task_type, run.task_index), run.cluster) == (task, cluster)
            assert "event=serving" in log
        job = wait_finished(example_cluster, name, FINISH_TIMEOUT)
        assert condition(job, "Succeeded"), job["status"]
        assert not condition(job, "Failed")
        (run,) = runs(example_cluster.log(f"{name}-chief-0"))
        assert ((run.task_type, run.task_index), run.cluster) == (("chief", "0"), cluster)
        assert run.epochs_run == EPOCHS
        assert run.test_accuracy is not None and run.test_accuracy >= STATED_ACCURACY, run
    finally:
        example_cluster.delete_job(name)


def _delete(cluster: Cluster, pod: str) -> None:
    cluster.delete_pod(pod)


def _evict(cluster: Cluster, pod: str) -> None:
    cluster.evict_pod(pod)


@pytest.mark.parametrize("disrupt", [_delete, _evict], ids=["deleted", "evicted"])
def test_a_worker_lost_mid_training_restarts_the_gang_which_resumes_from_its_checkpoint(
    example_cluster: Cluster, checkpoints: Path, tmp_path: Path, disrupt: Callable[[Cluster, str], None]
) -> None:
    name, workers, interrupt_after = f"tf-lost-{disrupt.__name__.strip('_')}", 2, 3
    # Slow steps (0.15 s, about 3 s an epoch) leave time to interrupt an epoch in the middle.
    job = example_job("collective.yaml", name, checkpoints, env={"STEP_DELAY": "0.15"}, workers=workers)
    example_cluster.submit(job)
    chief, lost = worker_pods(name, workers)
    try:
        wait_epoch(example_cluster, chief, 1, FINISH_TIMEOUT)
        old_uid = example_cluster.pod(chief)["metadata"]["uid"]  # type: ignore[index]
        follower = example_cluster.follow_log(chief, tmp_path / "chief-before.log")
        wait_epoch(example_cluster, chief, interrupt_after, FINISH_TIMEOUT)
        disrupt(example_cluster, lost)
        follower.wait(timeout=120)  # the old chief's container ends: the gang goes

        job = wait_finished(example_cluster, name, FINISH_TIMEOUT)
        assert condition(job, "Succeeded"), job["status"]
        assert not condition(job, "Failed"), job["status"]
        assert job["status"].get("disruptions") == 1, job["status"]
        assert "gangRestart" not in job["status"]
        new_chief = example_cluster.pod(chief)
        assert new_chief is not None and new_chief["metadata"]["uid"] != old_uid  # the whole gang was new

        (before,) = runs((tmp_path / "chief-before.log").read_text())
        assert not before.finished and (before.last_epoch or 0) >= interrupt_after
        for pod in (chief, lost):
            (after,) = runs(example_cluster.log(pod))
            # Resumed from the last epoch saved, not from the start; at most the interrupted epoch
            # runs again, and every epoch up to the last one is trained.
            assert after.resumed and after.first_epoch is not None and after.first_epoch > interrupt_after, (
                after
            )
            assert epochs_run_twice(before, after) == [], (before.last_epoch, after.first_epoch)
            assert after.first_epoch <= (before.last_epoch or 0) + 1, (before.last_epoch, after.first_epoch)
            assert [epoch.number for epoch in after.epochs] == list(range(after.first_epoch, EPOCHS + 1))
            assert after.test_accuracy is not None and after.test_accuracy >= STATED_ACCURACY, after

        status = _plugin(example_cluster, "status", name)
        assert "disruptions 1" in status, status
    finally:
        example_cluster.delete_job(name)
