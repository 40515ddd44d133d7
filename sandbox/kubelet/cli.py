"""`tfgang-sandbox kubelet`: the node agent against any API server."""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from pathlib import Path

from kube.api import KubeApi
from kube.client import make_api_client
from sandbox.foreground import run_in_foreground
from sandbox.kubelet.agent import AgentOptions, NodeAgent
from sandbox.kubelet.backoff import BackoffPolicy
from sandbox.kubelet.nodespec import NodeSpecError, parse_nodes

logger = logging.getLogger(__name__)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from error
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from error
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        default=os.environ.get("TFGANG_KUBECONFIG") or os.environ.get("KUBECONFIG"),
        help="kubeconfig file (env TFGANG_KUBECONFIG, then KUBECONFIG)",
    )
    parser.add_argument(
        "--nodes",
        default=os.environ.get("TFGANG_NODES") or "las1:cpu=8,memory=32Gi",
        help="nodes to run: NAME[:RES=QTY,...][;NAME...] (env TFGANG_NODES; default las1:cpu=8,memory=32Gi)",
    )
    parser.add_argument(
        "--backoff-base",
        type=_positive,
        default=os.environ.get("TFGANG_BACKOFF_BASE", "10"),
        help="first crash-loop back-off in seconds, capped at 30x (env TFGANG_BACKOFF_BASE; default 10)",
    )
    parser.add_argument(
        "--heartbeat", type=_positive, default=10.0, help="seconds between node status heartbeats"
    )
    parser.add_argument(
        "--start-delay",
        type=_non_negative,
        default=0.2,
        help="seconds a pod shows ContainerCreating before its processes start (default 0.2)",
    )
    parser.add_argument(
        "--sync-delay",
        type=_non_negative,
        default=1.0,
        help="seconds from a container's exit to its earliest restart, the kubelet's sync lag (default 1)",
    )
    parser.add_argument(
        "--log-port", type=int, default=0, help="port of the container log endpoint (default: any free)"
    )
    parser.add_argument(
        "--state-dir", type=Path, default=None, help="where container logs go (default: a temp dir)"
    )
    parser.add_argument(
        "--log-level",
        default=os.environ.get("TFGANG_LOG_LEVEL", "INFO"),
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
    )


async def serve(kubeconfig: str | None, options: AgentOptions) -> None:
    api = KubeApi(await make_api_client(kubeconfig), user_agent="tfgang-sandbox-kubelet")
    try:
        await NodeAgent(api, options).run()
    finally:
        await api.close()


def run(args: argparse.Namespace) -> int:
    try:
        nodes = tuple(parse_nodes(args.nodes))
    except NodeSpecError as error:
        logger.error("--nodes: %s", error)
        return 2
    if not 0 <= args.log_port <= 65535:
        logger.error("--log-port must be 0..65535, not %d", args.log_port)
        return 2
    with tempfile.TemporaryDirectory(prefix="tfgang-kubelet-") as scratch:
        options = AgentOptions(
            nodes=nodes,
            state_dir=args.state_dir or Path(scratch),
            backoff=BackoffPolicy.scaled(args.backoff_base),
            heartbeat_seconds=args.heartbeat,
            start_delay=args.start_delay,
            sync_delay=args.sync_delay,
            log_port=args.log_port,
        )
        return run_in_foreground(
            serve(args.kubeconfig, options), component="node agent", log_level=args.log_level
        )
