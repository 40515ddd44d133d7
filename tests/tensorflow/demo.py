"""``./scripts/demo tensorflow``: the TensorFlow example's collective job on the one-node cluster,
a worker deleted in the middle of training, and what a user watches meanwhile: the training's
progress lines from worker 0 and ``kubectl tfjob status``.

Starts a node (``realcluster.onenode``), installs tfgang as the README says, imports the
example's image (``scripts/real-images dockerfile``), runs the job, and tears everything down.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .onnode import Cluster, condition, example_job, wait_epoch, wait_finished, worker_pods
from .trainlog import progress_events

NAME = "digits-collective"


def say(text: str) -> None:
    print(f"\n=== {text}", flush=True)


def tfjob_status(cluster: Cluster) -> None:
    plugin = Path(sys.executable).parent / "kubectl-tfjob"
    done = subprocess.run(
        [str(plugin), "--kubeconfig", cluster.kubeconfig, "status", NAME],
        capture_output=True,
        text=True,
        check=False,
    )
    print(f"$ kubectl tfjob status {NAME}\n{done.stdout or done.stderr}", flush=True)


class Watcher:
    """Prints the progress lines of a pod's log that it has not printed yet (a new pod of the same
    name starts a new log: then it prints from its start)."""

    def __init__(self, cluster: Cluster, pod: str) -> None:
        self.cluster, self.pod = cluster, pod
        self.seen: list[str] = []

    def poll(self) -> None:
        lines = [line for line in self.cluster.log(self.pod).splitlines() if progress_events(line)]
        fresh = lines[len(self.seen) :] if lines[: len(self.seen)] == self.seen else lines
        for line in fresh:
            print(f"  {self.pod}: {line}", flush=True)
        self.seen = lines


def run(cluster: Cluster, checkpoints: Path, workers: int, delete_after: int) -> None:
    chief, *others = worker_pods(NAME, workers)
    say(f"kubectl apply -f examples/tensorflow/collective.yaml ({workers} workers, 0.15 s steps to watch)")
    cluster.submit(
        example_job("collective.yaml", NAME, checkpoints, env={"STEP_DELAY": "0.15"}, workers=workers)
    )
    watcher = Watcher(cluster, chief)
    wait_epoch(cluster, chief, 1, 600)
    tfjob_status(cluster)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        watcher.poll()
        if any(f"event=epoch epoch={delete_after} " in line for line in watcher.seen):
            break
        time.sleep(1)
    say(f"kubectl delete pod {others[-1]}  (in the middle of epoch {delete_after + 1})")
    cluster.delete_pod(others[-1])
    time.sleep(2)
    tfjob_status(cluster)
    say("tfgang restarts the whole gang; the new workers resume from the last checkpoint")
    while time.monotonic() < deadline:
        watcher.poll()
        job = cluster.job(NAME)
        if condition(job, "Succeeded") or condition(job, "Failed"):
            break
        time.sleep(1)
    watcher.poll()
    wait_finished(cluster, NAME, 60)
    say("done")
    tfjob_status(cluster)


def main() -> int:
    from realcluster.helmrelease import Images, Release
    from realcluster.onenode import find_images, start_one_node

    from .onnode import image_archive, image_folder

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--delete-after", type=int, default=4, help="epochs finished before the deletion")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tfgang-demo-tf-"))
    say("building (or reusing) the example's image; starting the one-node cluster")
    folder = image_folder()
    with start_one_node(workdir=workdir / "node") as node:
        say("installing tfgang as the README says")
        (workdir / "release").mkdir()
        Release(
            helm=node.node.components / "bin" / "helm",
            kubectl=node.node.components / "bin" / "kubectl",
            kubeconfig=Path(node.kubeconfig),
            workdir=workdir / "release",
            images=Images.read(node.node.images or find_images()),
        ).install()
        node.import_image(*image_archive(folder))
        checkpoints = node.workdir / "tensorflow-checkpoints"
        checkpoints.mkdir()
        run(
            Cluster(node.node.components / "bin" / "kubectl", node.kubeconfig),
            checkpoints,
            args.workers,
            args.delete_after,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
