"""``tfgang-sandbox up``: run a local cluster in the foreground and write a kubeconfig.

The API server runs here; the node agent, the gang scheduler and the operator are started when
their modules exist (``--nodes``, ``--operator``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import logging
import os
import signal

from sandbox.apiserver.kubeconfig import write_kubeconfig
from sandbox.apiserver.server import ApiServer
from sandbox.apiserver.storage import DEFAULT_WATCH_WINDOW
from sandbox.crds import VOLCANO_CRD_FILES, tfjob_crd_path

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        default=os.environ.get("TFGANG_KUBECONFIG", "sandbox.kubeconfig"),
        help="where to write the admin kubeconfig (env TFGANG_KUBECONFIG)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("TFGANG_PORT", "0")),
        help="HTTPS port on 127.0.0.1; 0 picks a free one (env TFGANG_PORT)",
    )
    parser.add_argument(
        "--nodes",
        default=os.environ.get("TFGANG_NODES", ""),
        help="node agent nodes, e.g. las1:cpu=8,memory=32Gi (env TFGANG_NODES)",
    )
    parser.add_argument(
        "--operator",
        action="store_true",
        default=os.environ.get("TFGANG_OPERATOR", "") in ("1", "true"),
        help="also start the tfgang webhook and controller (env TFGANG_OPERATOR)",
    )
    parser.add_argument("--tfjob-crd", default=None, help="the TFJob CRD file (default: the chart's)")
    parser.add_argument(
        "--watch-window",
        type=int,
        default=DEFAULT_WATCH_WINDOW,
        help="watch events kept for resuming watches before 410 Gone",
    )


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


async def _serve(args: argparse.Namespace) -> int:
    server = ApiServer(watch_window=args.watch_window)
    url = await server.start(port=args.port)
    for path in VOLCANO_CRD_FILES:
        await server.install_file(path)
    crd = args.tfjob_crd_resolved
    if crd:
        await server.install_file(crd)
    else:
        print("TFJob CRD not found; not installed")
    write_kubeconfig(args.kubeconfig, url, server.material.ca_pem, server.admin_token)
    print(f"sandbox API server at {url}; kubeconfig written to {args.kubeconfig}", flush=True)
    if args.nodes and not _module_exists("sandbox.kubelet.cli"):
        print("--nodes: the node agent is not available yet; no nodes started")
    elif args.nodes:
        print("--nodes: start the node agent with `tfgang-sandbox kubelet --kubeconfig ... --nodes ...`")
    if args.operator:
        print("--operator: the operator is not started by this command yet")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    print("stopping the sandbox", flush=True)
    await server.stop()
    return 0


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    crd = args.tfjob_crd or tfjob_crd_path()
    args.tfjob_crd_resolved = crd if crd and os.path.exists(crd) else None
    try:
        return asyncio.run(_serve(args))
    except OSError as exc:
        print(f"tfgang-sandbox up: {exc}")
        return 1
