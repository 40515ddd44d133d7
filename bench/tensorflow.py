"""The TensorFlow example on the one-node cluster: what tfgang and Volcano add to a real job's
start, and what a lost worker costs.

Run: ``python bench/tensorflow.py [--runs 3] [--workers 2] [--workdir DIR]``. Needs what the
real-node tests need (``scripts/real-components``, ``scripts/real-images``, both built when their
``TFGANG_REAL_*`` variable is unset) and the example's image (``scripts/real-images dockerfile``,
or ``$TFGANG_TF_EXAMPLE_IMAGE``). Starts one node, installs tfgang as the README says, then per
run:

- **by hand**: the same image started as plain containers on the node (``ctr run``: the node's
  containerd and runc, no kubelet, no tfgang, no Volcano) with a hand-written ``TF_CONFIG`` on
  loopback and the CPU weight the example's pods get (``cpu.shares`` 256 for their 250m
  request): launch -> the first training step (every worker's ``first_step`` line). One unmeasured
  run first, so that both ways find TensorFlow's files in the page cache;
- **as a TFJob**: ``kubectl apply`` -> every worker pod Running -> the first training step;
- **a worker deleted** in the middle of epoch 4 (``kubectl delete pod``): deletion -> every new pod
  Running -> the first step of the new gang (resumed from its checkpoint), the time lost.

Times of training steps are the ``time=`` stamps of the example's progress lines: the containers
share this machine's clock. Prints one table; writes nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from realcluster.helmrelease import Images, Release  # noqa: E402
from realcluster.node.containerd import NAMESPACE as CTR_NAMESPACE  # noqa: E402
from realcluster.node.containerd import socket_path  # noqa: E402
from realcluster.onenode import OneNode, find_images, start_one_node  # noqa: E402
from tests.tensorflow.onnode import (  # noqa: E402
    Cluster,
    example_job,
    image_archive,
    image_folder,
    wait_epoch,
    wait_finished,
    wait_for,
    worker_pods,
)
from tests.tensorflow.trainlog import Run, runs  # noqa: E402

TIMEOUT = 600.0
POD_CPU_SHARES = 256
"""The kubelet's cpu.shares for the example's 250m CPU request (1024 per core)."""


@dataclass
class Figures:
    by_hand_first_step: float = 0.0
    ratio: float = 0.0
    submit_running: float = 0.0
    submit_first_step: float = 0.0
    deletion_running: float = 0.0
    deletion_first_step: float = 0.0
    resumed_at: int = 0
    interrupted: int = 0
    notes: list[str] = field(default_factory=list)


def first_step(found: list[Run]) -> float | None:
    return found[-1].first_step if found else None


def by_hand(node: OneNode, workers: int, checkpoints: Path, image: str, tag: str) -> float:
    """Seconds from launching ``workers`` plain containers to every worker's first training step."""
    ports = [24400 + index for index in range(workers)]
    cluster = {"worker": [f"localhost:{port}" for port in ports]}
    outputs: dict[int, str] = {}
    ctr = [node.node.bin("ctr"), "--address", str(socket_path(node.node)), "-n", CTR_NAMESPACE]

    def worker(index: int) -> None:
        tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        outputs[index] = node.run(
            [
                *ctr, "run", "--rm", "--net-host", "--cpu-shares", str(POD_CPU_SHARES),
                "--env", f"TF_CONFIG={tf_config}",
                "--mount", f"type=bind,src={checkpoints},dst=/checkpoints,options=rbind:rw",
                image, f"tf-by-hand-{tag}-{index}",
                "python", "/example/train.py", "--strategy", "collective",
                "--checkpoint-dir", f"/checkpoints/{tag}",
            ],
            timeout=TIMEOUT,
        )  # fmt: skip

    started = time.time()
    threads = [threading.Thread(target=worker, args=(index,)) for index in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stamps = [first_step(runs(outputs.get(index, ""))) for index in range(workers)]
    if None in stamps:
        raise RuntimeError(f"a hand-started worker never stepped: {outputs}")
    return max(s for s in stamps if s is not None) - started


def pods_running(cluster: Cluster, pods: list[str], old_uids: frozenset[str] = frozenset()) -> bool:
    for name in pods:
        pod = cluster.pod(name)
        if (
            pod is None
            or pod["metadata"]["uid"] in old_uids
            or pod.get("status", {}).get("phase") != "Running"
        ):
            return False
    return True


def as_tfjob(cluster: Cluster, workers: int, checkpoints: Path, name: str, figures: Figures) -> None:
    pods = worker_pods(name, workers)
    job = example_job("collective.yaml", name, checkpoints, workers=workers)
    started = time.time()
    cluster.submit(job)
    wait_for("every worker Running", lambda: pods_running(cluster, pods), TIMEOUT, interval=0.2)
    figures.submit_running = time.time() - started
    stamps = [
        wait_for(f"{pod}'s first step", lambda pod=pod: first_step(runs(cluster.log(pod))), TIMEOUT)  # type: ignore[misc]
        for pod in pods
    ]
    figures.submit_first_step = max(stamps) - started
    wait_finished(cluster, name, TIMEOUT)
    cluster.delete_job(name)


def worker_deleted(cluster: Cluster, workers: int, checkpoints: Path, name: str, figures: Figures) -> None:
    pods = worker_pods(name, workers)
    cluster.submit(
        example_job("collective.yaml", name, checkpoints, env={"STEP_DELAY": "0.15"}, workers=workers)
    )
    before = wait_epoch(cluster, pods[0], 3, TIMEOUT)[-1]
    old_uids = frozenset(cluster.pod(pod)["metadata"]["uid"] for pod in pods)  # type: ignore[index]
    time.sleep(1.0)  # into epoch 4
    deleted = time.time()
    cluster.delete_pod(pods[-1])
    wait_for("the new gang Running", lambda: pods_running(cluster, pods, old_uids), TIMEOUT, interval=0.2)
    figures.deletion_running = time.time() - deleted

    def resumed_step() -> float | None:
        found = runs(cluster.log(pods[0]))
        return first_step(found) if found and found[-1].resumed else None

    figures.deletion_first_step = wait_for("the new gang's first step", resumed_step, TIMEOUT) - deleted
    after = runs(cluster.log(pods[0]))[-1]
    figures.interrupted, figures.resumed_at = (before.last_epoch or 0) + 1, after.first_epoch or 0
    wait_finished(cluster, name, TIMEOUT)
    cluster.delete_job(name)


@contextmanager
def node_with_tfgang(workdir: Path) -> Iterator[tuple[OneNode, Cluster, str]]:
    with start_one_node(workdir=workdir / "node") as node:
        release = Release(
            helm=node.node.components / "bin" / "helm",
            kubectl=node.node.components / "bin" / "kubectl",
            kubeconfig=Path(node.kubeconfig),
            workdir=workdir / "release",
            images=Images.read(node.node.images or find_images()),
        )
        (workdir / "release").mkdir(parents=True, exist_ok=True)
        release.install()
        archive, image = image_archive(image_folder())
        node.import_image(archive, image)
        yield node, Cluster(node.node.components / "bin" / "kubectl", node.kubeconfig), image


def render(all_figures: list[Figures], workers: int) -> str:
    def column(key: str) -> str:
        values = [getattr(f, key) for f in all_figures]
        return f"{statistics.median(values):6.1f} s  ({', '.join(f'{v:.1f}' for v in values)})"

    ratios = [f.ratio for f in all_figures]
    lines = [
        f"TensorFlow example, {workers} collective workers, one node, {len(all_figures)} run(s):"
        " median (each run)",
        f"  by hand (ctr run): launch -> first training step        {column('by_hand_first_step')}",
        f"  TFJob: kubectl apply -> every worker Running             {column('submit_running')}",
        f"  TFJob: kubectl apply -> first training step              {column('submit_first_step')}",
        f"    ratio to by hand, per run                              {statistics.median(ratios):6.2f}x"
        f"  ({', '.join(f'{r:.2f}' for r in ratios)}; goal <= 2x)",
        f"  worker deleted: deletion -> new gang Running             {column('deletion_running')}",
        f"  worker deleted: deletion -> training goes on (1st step)  {column('deletion_first_step')}",
        "  interrupted epoch -> resumed at: "
        + ", ".join(f"{f.interrupted} -> {f.resumed_at}" for f in all_figures),
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tfgang-bench-tf-"))
    all_figures: list[Figures] = []
    with node_with_tfgang(workdir) as (node, cluster, image):
        checkpoints = node.workdir / "tensorflow-checkpoints"
        checkpoints.mkdir(parents=True, exist_ok=True)
        by_hand(node, args.workers, checkpoints, image, "warm-up")
        for index in range(args.runs):
            figures = Figures()
            figures.by_hand_first_step = by_hand(node, args.workers, checkpoints, image, f"hand-{index}")
            as_tfjob(cluster, args.workers, checkpoints, f"bench-tf-{index}", figures)
            figures.ratio = figures.submit_first_step / figures.by_hand_first_step
            worker_deleted(cluster, args.workers, checkpoints, f"bench-tf-lost-{index}", figures)
            all_figures.append(figures)
            print(render([figures], args.workers), flush=True)
    print(render(all_figures, args.workers), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
