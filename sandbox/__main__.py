"""`tfgang-sandbox`: a local Kubernetes for development, tests and the demo.

Each subcommand lives in its own module exposing ``add_arguments(parser)`` and ``run(args) -> int``;
they are imported only when chosen, so one subcommand's dependencies never slow another's start.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "up": ("sandbox.up", "run a local cluster in the foreground and write a kubeconfig"),
    "demo": ("sandbox.demo", "replay the seed's TFJob experiments on a fresh local cluster"),
    "kubelet": ("sandbox.kubelet.cli", "run the node agent against any API server"),
    "scheduler": ("sandbox.scheduler.cli", "run the Volcano-like gang scheduler against any API server"),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tfgang-sandbox", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = {}
    chosen = (list(argv) if argv is not None else sys.argv[1:])[:1]
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_text)
        if chosen == [name]:
            module = importlib.import_module(module_name)
            module.add_arguments(sub)
            modules[name] = module
    args = parser.parse_args(argv)
    result: int = modules[args.command].run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
