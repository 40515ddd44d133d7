"""`tfgang-sandbox kubelet`: the node agent against any API server."""

from __future__ import annotations

import argparse
import functools
import logging
import tempfile
from pathlib import Path

from kube.api import KubeApi
from kube.client import make_api_client
from kube.flags import Flags, integer, non_negative_number, positive_number
from sandbox.foreground import run_in_foreground
from sandbox.kubelet.agent import AgentOptions, NodeAgent
from sandbox.kubelet.backoff import BackoffPolicy
from sandbox.kubelet.nodespec import NodeSpecError, parse_nodes

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = functools.partial(Flags().add, parser)
    add("--kubeconfig", None, "kubeconfig file", also=("KUBECONFIG",))
    add("--nodes", "las1:cpu=8,memory=32Gi", "nodes to run: NAME[:RES=QTY,...][;NAME...]")
    add("--backoff-base", 10.0, "first crash-loop back-off in seconds, capped at 30x", type=positive_number)
    add("--heartbeat", 10.0, "seconds between node status heartbeats", type=positive_number)
    add(
        "--start-delay",
        0.2,
        "seconds a pod shows ContainerCreating before its processes start",
        type=non_negative_number,
    )
    add(
        "--sync-delay",
        1.0,
        "seconds from a container's exit to its earliest restart, the kubelet's sync lag",
        type=non_negative_number,
    )
    add("--log-port", 0, "port of the container log endpoint (0: any free)", type=integer)
    add("--state-dir", None, "where container logs go (default: a temp dir)", type=Path)
    add("--log-level", "INFO", "log level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


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
