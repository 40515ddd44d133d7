"""``python -m realcluster up``: the one-node cluster in the foreground until Ctrl-C."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from realcluster.apiserver import run_in_foreground
from realcluster.onenode import IMAGES_ENV, start_one_node
from realcluster.volcano import COMPONENTS_ENV


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m realcluster", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start the one-node cluster and keep it until Ctrl-C")
    up.add_argument("--kubeconfig", type=Path, help="also copy the admin kubeconfig here")
    up.add_argument(
        "--components", type=Path, help=f"the built components (default: ${COMPONENTS_ENV} or the build)"
    )
    up.add_argument("--images", type=Path, help=f"the built images (default: ${IMAGES_ENV} or the build)")
    up.add_argument(
        "--workdir", type=Path, help="keep certificates, data and logs here (default: a temporary folder)"
    )
    up.add_argument(
        "--port",
        type=int,
        default=0,
        help="the host's loopback port for kube-apiserver (default: a free one)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    started = start_one_node(args.components, args.images, args.workdir, port=args.port)
    return run_in_foreground(started, args.kubeconfig, "the one-node cluster's kube-apiserver")


if __name__ == "__main__":
    sys.exit(main())
