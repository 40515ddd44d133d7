"""``tfgang-sandbox up``: run a local cluster in the foreground and write a kubeconfig.

By default the whole local cluster runs (``sandbox.cluster``): this API server, the gang
scheduler and a node agent for ``--nodes``, plus the tfgang webhook and controller with
``--operator``. ``--api-only`` runs the API server alone. SIGINT or SIGTERM stop everything.

What it prints names every port (the API server's, the webhook's, each component's ops port), and
the folder of the components' logs, kubeconfigs and certificates (``--workdir``) is printed first
and kept after exit, so a failure can be read after Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import importlib
import importlib.util
import logging
import os
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kube.flags import Flags, integer, number, port
from realcluster.crds import VOLCANO_CRD_FILES, tfjob_crd_path
from realcluster.kubeconfig import write_kubeconfig
from sandbox.apiserver.faults import FAULT_CODES, MAX_LATENCY, ErrorRule, StandingFaults
from sandbox.apiserver.server import ApiServer
from sandbox.apiserver.storage import DEFAULT_WATCH_WINDOW

logger = logging.getLogger(__name__)

DEFAULT_NODES = "las1:cpu=8,memory=32Gi"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = functools.partial(Flags().add, parser)
    add("--kubeconfig", "sandbox.kubeconfig", "where to write the admin kubeconfig")
    add("--port", 0, "HTTPS port on 127.0.0.1; 0 picks a free one", type=port)
    add("--nodes", DEFAULT_NODES, "node agent nodes, '' for none")
    add("--operator", False, "also run the tfgang webhook and controller", switch=True)
    add("--api-only", False, "run the API server alone: no scheduler, node agent or operator", switch=True)
    add("--tfjob-crd", None, "the TFJob CRD file (default: the chart's)")
    add(
        "--workdir",
        None,
        "keep the components' logs, kubeconfigs and certificates here, after exit too "
        "(default: a new tfgang-sandbox-* folder in the temporary directory)",
        type=Path,
    )
    add(
        "--watch-window",
        DEFAULT_WATCH_WINDOW,
        "watch events kept for resuming watches before 410 Gone",
        type=integer,
    )
    add_fault_arguments(parser)


def _within(low: float, high: float, unit: str = "") -> Callable[[str], float]:
    """An argparse type: a number within ``low..high``."""

    def parse(text: str) -> float:
        value = number(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be within {low:g}..{high:g}{unit}: {text!r}")
        return value

    return parse


def add_fault_arguments(parser: argparse.ArgumentParser) -> None:
    faults = parser.add_argument_group(
        "fault injection", "standing faults from the start; POST /sandbox/faults changes them later"
    )
    add = functools.partial(Flags().add, faults)
    add(
        "--fault-error-rate",
        0.0,
        "answer this fraction of API requests with --fault-error-code instead",
        type=_within(0.0, 1.0),
    )
    add(
        "--fault-error-code",
        429,
        "the injected error: 429 (with Retry-After: 1), 500 or 503",
        type=integer,
        choices=FAULT_CODES,
    )
    add(
        "--fault-latency",
        0.0,
        "seconds added to every API request",
        type=_within(0.0, MAX_LATENCY, " seconds"),
    )


def standing_faults(args: argparse.Namespace) -> StandingFaults:
    errors = ErrorRule(args.fault_error_rate, args.fault_error_code) if args.fault_error_rate else None
    return StandingFaults(errors, args.fault_latency)


def _cluster_available() -> bool:
    try:
        return importlib.util.find_spec("sandbox.cluster") is not None
    except ModuleNotFoundError:
        return False


async def _serve_api_only(args: argparse.Namespace, crd: str | None) -> int:
    server = ApiServer(watch_window=args.watch_window)
    url = await server.start(port=args.port)
    for path in VOLCANO_CRD_FILES:
        await server.install_file(path)
    if crd:
        await server.install_file(crd)
    else:
        print("TFJob CRD not found; not installed")
    write_kubeconfig(args.kubeconfig, url, server.material.ca_pem, server.admin_token)
    server.faults.standing = standing_faults(args)
    print(f"sandbox API server at {url}; kubeconfig written to {args.kubeconfig}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    print("stopping the sandbox", flush=True)
    await server.stop()
    return 0


def _serve_cluster(args: argparse.Namespace, crd: str | None) -> int:
    cluster = importlib.import_module("sandbox.cluster")
    workdir: Path = args.workdir or Path(tempfile.mkdtemp(prefix="tfgang-sandbox-"))
    options = cluster.ClusterOptions(
        nodes=args.nodes,
        operator=args.operator,
        port=args.port,
        kubeconfig=Path(args.kubeconfig),
        workdir=workdir,
        tfjob_crd=crd,
        watch_window=args.watch_window,
        faults=standing_faults(args),
    )
    # Before anything starts, so a cluster that fails to start still says where to look.
    _emit(f"component logs in {workdir / 'logs'} (kept after exit)")
    result: int = asyncio.run(_serve(cluster, options))
    _emit(f"component logs kept in {workdir / 'logs'}")
    return result


def _emit(line: str) -> None:
    print(line, flush=True)


def ports_line(webhook_port: int, ops_ports: dict[str, int]) -> str:
    """The operator's ports, each named: the webhook's HTTPS port, then every ops port."""
    ops = ", ".join(f"{name} ops :{port}" for name, port in ops_ports.items())
    return f"tfgang webhook at https://127.0.0.1:{webhook_port}; {ops} (/healthz, /readyz, /metrics)"


async def _serve(cluster: Any, options: Any) -> int:
    """Run the cluster until SIGINT or SIGTERM (0) or until a component dies (1)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    local = cluster.LocalCluster(options)
    try:
        await local.start()
    except cluster.ClusterError as error:
        _emit(f"the sandbox did not start: {error}")
        return 1
    try:
        _emit(f"sandbox API server at {local.url}; kubeconfig written to {local.kubeconfig}")
        if options.nodes:
            _emit(f"node agent running nodes {options.nodes}; gang scheduler running")
        else:
            _emit("gang scheduler running; no nodes (--nodes)")
        if options.operator:
            _emit(ports_line(local.webhook_port, local.ops_ports))
        _emit("Ctrl-C stops everything")
        stopped = asyncio.create_task(stop.wait())
        failed = asyncio.create_task(local.supervisor.failed.wait())
        await asyncio.wait({stopped, failed}, return_when=asyncio.FIRST_COMPLETED)
        for task in (stopped, failed):
            task.cancel()
        if local.supervisor.failed.is_set():
            _emit(f"stopping the sandbox: {local.supervisor.failure}")
            return 1
        _emit("stopping the sandbox")
    finally:
        await local.stop()
    return 0


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    crd = args.tfjob_crd or tfjob_crd_path()
    if crd and not os.path.exists(crd):
        print(f"tfgang-sandbox up: the TFJob CRD file {crd} does not exist")
        return 2
    try:
        if args.api_only:
            return asyncio.run(_serve_api_only(args, crd))
        if not _cluster_available():
            print("the local cluster components are not available; running the API server alone")
            return asyncio.run(_serve_api_only(args, crd))
        return _serve_cluster(args, crd)
    except OSError as exc:
        print(f"tfgang-sandbox up: {exc}")
        return 1
