"""The TensorFlow example without a cluster and without TensorFlow: its TFJobs as tfgang explains
them offline, its image recipe, and the progress lines the real-node tests read."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.kubectl_tfjob.plugin import REPO, plugin

from .trainlog import EXAMPLE_DIR, epochs_run_twice, progress_events, progress_module, runs

COLLECTIVE = EXAMPLE_DIR / "collective.yaml"
PARAMETER_SERVER = EXAMPLE_DIR / "parameter-server.yaml"


def _explain(path: Path) -> dict[str, Any]:
    result = plugin("explain", "-f", str(path), "-o", "json", env={"KUBECONFIG": "/nonexistent/kc"})
    assert result.returncode == 0, result.stderr
    view: dict[str, Any] = json.loads(result.stdout)
    assert (view["valid"], view["errors"]) == (True, []), view
    return view


def _containers(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    specs = job["spec"]["tfReplicaSpecs"]
    return {rtype: spec["template"]["spec"]["containers"][0] for rtype, spec in specs.items()}


def test_collective_job_gives_every_worker_the_whole_cluster_by_service_name() -> None:
    view = _explain(COLLECTIVE)
    names = [f"digits-collective-worker-{i}" for i in range(3)]
    assert [pod["name"] for pod in view["pods"]] == names
    assert [service["metadata"]["name"] for service in view["services"]] == names
    addresses = [f"{name}.default.svc:2222" for name in names]
    for index, pod in enumerate(view["pods"]):
        assert json.loads(pod["tfConfig"]) == {
            "cluster": {"worker": addresses},
            "task": {"type": "worker", "index": index},
            "environment": "cloud",
        }
    # One gang of three: Volcano starts all workers or none.
    assert view["podGroup"]["spec"]["minMember"] == 3


def test_collective_job_restarts_as_a_gang_and_tolerates_the_survivor_exiting_first() -> None:
    job = yaml.safe_load(COLLECTIVE.read_text())
    assert job["metadata"]["annotations"]["tfgang.io/gang-restart"] == "true"
    worker = job["spec"]["tfReplicaSpecs"]["Worker"]
    # A worker whose peer vanished exits 1 ("Collective ops is aborted"): restarted in place,
    # never a permanent failure of the job (ExitCode or Never would fail it).
    assert worker["restartPolicy"] == "OnFailure"
    assert job["spec"]["runPolicy"]["backoffLimit"] >= 1
    # Every worker of a collective runs model.fit to the end: the job is done when all are.
    assert job["spec"]["successPolicy"] == "AllWorkers"


def test_parameter_server_job_has_chief_ps_and_workers_and_removes_the_servers_after_success() -> None:
    view = _explain(PARAMETER_SERVER)
    pods = {pod["name"]: json.loads(pod["tfConfig"]) for pod in view["pods"]}
    assert sorted(pods) == ["digits-ps-chief-0", "digits-ps-ps-0", "digits-ps-worker-0", "digits-ps-worker-1"]
    assert pods["digits-ps-chief-0"]["cluster"] == {
        "chief": ["digits-ps-chief-0.default.svc:2222"],
        "ps": ["digits-ps-ps-0.default.svc:2222"],
        "worker": ["digits-ps-worker-0.default.svc:2222", "digits-ps-worker-1.default.svc:2222"],
    }
    # PS and workers never exit by themselves: the chief's success ends the job, and the
    # servers still running must be removed then.
    assert view["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    assert view["spec"]["successPolicy"] == ""


@pytest.mark.parametrize("path", [COLLECTIVE, PARAMETER_SERVER], ids=lambda p: p.name)
def test_every_replica_shares_one_checkpoint_directory_per_job(path: Path) -> None:
    job = yaml.safe_load(path.read_text())
    strategy = "collective" if path == COLLECTIVE else "parameter-server"
    for rtype, spec in job["spec"]["tfReplicaSpecs"].items():
        pod = spec["template"]["spec"]
        container = pod["containers"][0]
        assert container["name"] == "tensorflow", rtype
        assert container["args"] == ["--strategy", strategy]
        assert container["image"].startswith("tfgang-example-tensorflow:")
        assert container["imagePullPolicy"] == "IfNotPresent"  # built on the node, never pulled
        env = {entry["name"]: entry for entry in container["env"]}
        assert env["JOB_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == (
            "metadata.labels['training.kubeflow.org/job-name']"
        )
        assert env["CHECKPOINT_DIR"]["value"] == "/checkpoints/$(JOB_NAME)"
        # The variable it refers to comes first, or Kubernetes leaves $(JOB_NAME) as it is.
        assert list(env).index("JOB_NAME") < list(env).index("CHECKPOINT_DIR")
        assert container["volumeMounts"] == [{"name": "checkpoints", "mountPath": "/checkpoints"}]
        (volume,) = pod["volumes"]
        assert volume["name"] == "checkpoints" and volume["hostPath"]["type"] == "DirectoryOrCreate"


def test_the_example_fits_one_node_of_two_cores() -> None:
    for path in (COLLECTIVE, PARAMETER_SERVER):
        minimum = _explain(path)["podGroup"]["spec"]["minResources"]
        cpu = minimum["cpu"]
        millicores = int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000
        assert millicores <= 1500, (path.name, minimum)


def test_image_builds_on_tfgangs_base_with_one_pinned_tensorflow() -> None:
    base = re.findall(r"^FROM (\S+)", (REPO / "Dockerfile").read_text(), flags=re.MULTILINE)[0]
    dockerfile = (EXAMPLE_DIR / "Dockerfile").read_text()
    assert re.findall(r"^FROM (\S+)", dockerfile, flags=re.MULTILINE) == [base]
    assert "pip install --no-deps -r /example/requirements.txt" in dockerfile
    pins = {}
    for line in (EXAMPLE_DIR / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version, f"not pinned: {line}"
            pins[name.lower().replace("_", "-")] = version
    assert pins["tensorflow-cpu"] == pins["tf-keras"] == "2.21.0"
    assert "scikit-learn" in pins
    assert "tensorflow" not in pins  # the GPU build that tf-keras' own dependency would bring


def test_progress_lines_round_trip_and_other_lines_are_ignored() -> None:
    progress = progress_module()
    line = progress.format_line("epoch", epoch=3, loss=0.25, resumed=True, cluster={"worker": ["a:1", "b:2"]})
    fields = progress.parse_line(line)
    assert fields is not None
    assert {key: value for key, value in fields.items() if key != "time"} == {
        "event": "epoch",
        "epoch": "3",
        "loss": "0.2500",
        "resumed": "true",
        "cluster": '{"worker":["a:1","b:2"]}',
    }
    assert float(fields["time"]) > 0
    for other in (
        "I0000 00:00:1796617476.262636    1338 port.cc:153] oneDNN custom operations are on.",
        "[train]",
        "[train] epoch=3",  # no event
        "[training] event=epoch",
        "",
    ):
        assert progress.parse_line(other) is None, other
    with pytest.raises(ValueError):
        progress.format_line("epoch", note="two words")


# A worker's log as the example prints it (TensorFlow's own lines shortened): the interrupted run
# is killed during epoch 6; the next run starts at `first`.
CLUSTER_LINE = (
    "[train] event=cluster strategy=collective task_type=worker task_index=1 "
    'cluster={"worker":["localhost:23400","localhost:23401"]} time=1796617560.000\n'
)


def _run_log(first: int, last: int, *, done: bool) -> str:
    resumed = "true" if first > 1 else "false"
    lines = [
        "I0000 00:00:1796617476.262636    1338 port.cc:153] oneDNN custom operations are on.\n",
        CLUSTER_LINE,
        f"[train] event=start first_epoch={first} epochs=10 resumed={resumed} time=1796617561.000\n",
        "[train] event=first_step time=1796617562.500\n",
    ]
    lines += [
        f"[train] event=epoch epoch={n} epochs=10 loss=0.5000 accuracy=0.9000 resumed={resumed} "
        f"first_epoch={first} seconds=2.7000 time={1796617562 + 3 * n}.000\n"
        for n in range(first, last + 1)
    ]
    if done:
        lines.append(
            f"[train] event=done test_accuracy=0.9667 epochs_run={last - first + 1} resumed={resumed} "
            "seconds=17.2810 time=1796617624.099\n"
        )
    else:
        lines.append(
            "tensorflow.python.framework.errors_impl.UnavailableError: Collective ops is aborted by...\n"
        )
    return "".join(lines)


def test_a_log_of_two_runs_reads_as_an_interrupted_run_and_its_resumption() -> None:
    before, after = runs(_run_log(1, 5, done=False) + _run_log(6, 10, done=True))
    assert (before.task_type, before.task_index) == ("worker", "1")
    assert before.cluster == {"worker": ["localhost:23400", "localhost:23401"]}
    assert (before.first_epoch, before.resumed, before.last_epoch, before.finished) == (1, False, 5, False)
    assert before.first_step == 1796617562.5
    assert (after.first_epoch, after.resumed, after.finished, after.epochs_run) == (6, True, True, 5)
    assert [epoch.number for epoch in after.epochs] == [6, 7, 8, 9, 10]
    assert after.test_accuracy == pytest.approx(0.9667)
    assert epochs_run_twice(before, after) == []


def test_a_run_that_started_over_ran_every_finished_epoch_twice() -> None:
    before, after = runs(_run_log(1, 5, done=False) + _run_log(1, 10, done=True))
    assert (after.first_epoch, after.resumed) == (1, False)
    assert epochs_run_twice(before, after) == [1, 2, 3, 4, 5]
    # Resuming at the last epoch the replica printed (the chief's save of it was cut short).
    before, after = runs(_run_log(1, 5, done=False) + _run_log(5, 10, done=True))
    assert epochs_run_twice(before, after) == [5]
    assert len(progress_events(_run_log(1, 5, done=False))) == 8
