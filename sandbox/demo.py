"""``tfgang-sandbox demo``: replay the seed transcript's TFJob experiments on a fresh local cluster.

Starts the whole cluster (API server, Volcano-like scheduler, one node ``las1`` with the node
agent, the tfgang webhook and controller as processes), then for each experiment shows kubectl's
three watch streams and the Environment of ``tftest-ps-0``, as the transcript does, and deletes
the job before the next one. Exits 0 only when every experiment ended in the transcript's state.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import os
import signal
import sys
from pathlib import Path

from kube.flags import Flags, number, positive_number
from realcluster.apiserver import RealApiServerError
from realcluster.helmrelease import ReleaseError
from realcluster.kubectl import KubectlError, find_kubectl
from sandbox.backends import KINDS, KUBE_APISERVER, NODE, SANDBOX, VOLCANO
from sandbox.cluster import ClusterError, ClusterOptions, LocalCluster
from sandbox.nodebackend import NodeBackendError
from sandbox.seedreplay import (
    EXPERIMENTS,
    NODE_CPU,
    ExperimentRecord,
    SeedError,
    SeedReplay,
    backoff_base_for,
    fit_cpu,
    seed_dir,
    shorten_manifest,
)

logger = logging.getLogger(__name__)

NODES = "las1:cpu=8,memory=32Gi"
CHOICES = (*EXPERIMENTS, "all")


def _speed(text: str) -> float:
    value = number(text)
    if not 1 <= value <= 20:
        raise argparse.ArgumentTypeError(f"must be between 1 and 20: {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "experiment",
        nargs="?",
        default="all",
        choices=CHOICES,
        help="which seed experiment to replay (default all, in the transcript's order)",
    )
    add = functools.partial(Flags().add, parser)
    add(
        "--speed",
        1.0,
        "divide the seed's sleeps (and the crash back-off) by this, 1-20 (1: verbatim)",
        type=_speed,
        also=("TFGANG_DEMO_SPEED",),
    )
    add("--kubectl", None, "kubectl binary (default: the venv's, else PATH)")
    add("--workdir", None, "keep kubeconfigs and component logs here (default: a temporary dir)", type=Path)
    add("--timeout", 240.0, "seconds each experiment may take", type=positive_number)
    add(
        "--transcript",
        False,
        "after each experiment, also print each watch's lines grouped, as the transcript lays them out",
        switch=True,
    )
    add(
        "--apiserver",
        SANDBOX,
        "the cluster to replay on: the sandbox's API server and scheduler, a real kube-apiserver "
        "v1.20 (scripts/kube-apiserver), kube-apiserver v1.37 with the real Volcano "
        "(scripts/real-components), or the real one-node cluster (kubelet, containerd, Volcano; "
        "scripts/real-cluster) with tfgang installed by the README's helm install",
        choices=list(KINDS),
    )
    add("--log-level", "WARNING", "log level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def _display_path(path: Path) -> str:
    return os.path.relpath(path)


def _emit(line: str) -> None:
    print(line, flush=True)


def _print_grouped(record: ExperimentRecord) -> None:
    for resource, lines in record.streams.items():
        _emit(f"$ kubectl get {resource} -owide -w")
        for line in lines:
            _emit(line)


async def replay(args: argparse.Namespace) -> int:
    names = list(EXPERIMENTS) if args.experiment == "all" else [args.experiment]
    kubectl_binary = find_kubectl(args.kubectl)
    seeds = seed_dir()
    on_node = args.apiserver == NODE
    manifests = {
        name: shorten_manifest((seeds / f"{name}.yaml").read_text(encoding="utf-8"), args.speed)
        for name in names
    }
    if on_node:
        manifests = {name: fit_cpu(text) for name, text in manifests.items()}
    backoff = backoff_base_for(args.speed)
    speed_note = (
        "" if args.speed == 1 else f", sleeps divided by {args.speed:g}, crash back-off {backoff:.1f}s"
    )
    cluster_parts = {
        SANDBOX: "the sandbox's API server and scheduler (Volcano-like, binpack)",
        KUBE_APISERVER: "kube-apiserver v1.20, the sandbox's scheduler (Volcano-like, binpack)",
        VOLCANO: "kube-apiserver v1.37 and the real Volcano",
        NODE: "the real one-node cluster (kubelet, containerd, the real Volcano)",
    }[args.apiserver]
    if on_node:
        # The kubelet's own crash back-off (10 s, doubling) cannot be shortened.
        speed_note = "" if args.speed == 1 else f", sleeps divided by {args.speed:g}"
        _emit(
            f"==> starting {cluster_parts}, then helm install of tfgang (its webhook and controller "
            f"as pods); each seed pod asks {NODE_CPU} CPU instead of 1{speed_note}"
        )
    else:
        _emit(
            f"==> starting the local cluster: {cluster_parts}, node {NODES}, "
            f"tfgang webhook and controller{speed_note}"
        )
    options = ClusterOptions(
        nodes="" if on_node else NODES,
        operator=not on_node,
        backoff_base=backoff,
        workdir=args.workdir,
        apiserver=args.apiserver,
        startup_timeout=900.0 if on_node else ClusterOptions.startup_timeout,
    )
    records: list[ExperimentRecord] = []
    async with LocalCluster(options) as cluster:
        _emit(f"==> cluster ready: {cluster.url}, kubeconfig {cluster.kubeconfig}")
        async with SeedReplay(cluster, kubectl_binary, _emit, timeout=args.timeout) as seed:
            for index, name in enumerate(names, start=1):
                _emit("")
                _emit(f"==> experiment {index}/{len(names)}: {name}")
                source = _display_path(seeds / f"{name}.yaml")
                changes = [f"its sleeps divided by {args.speed:g}"] if args.speed != 1 else []
                if on_node:
                    changes.append(f"each pod's CPU at {NODE_CPU}")
                if changes:
                    source = f"- ({source} with {' and '.join(changes)})"
                record = await seed.run(EXPERIMENTS[name], manifests[name], source)
                records.append(record)
                if args.transcript:
                    _print_grouped(record)
                await seed.delete_job(manifests[name])
    _emit("")
    for record in records:
        verdict = (
            "as in the transcript"
            if record.reached
            else "NOT as in the transcript: " + "; ".join(record.missing)
        )
        _emit(f"==> {record.experiment}: {EXPERIMENTS[record.experiment].final_state}: {verdict}")
    return 0 if records and all(record.reached for record in records) else 1


async def _main(args: argparse.Namespace) -> int:
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    if task is not None:
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
    return await replay(args)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return asyncio.run(_main(args))
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("==> interrupted; the cluster has been stopped", file=sys.stderr)
        return 130
    except (
        ClusterError,
        KubectlError,
        SeedError,
        RealApiServerError,
        NodeBackendError,
        ReleaseError,
        OSError,
    ) as error:
        print(f"tfgang-sandbox demo: {error}", file=sys.stderr)
        return 1
