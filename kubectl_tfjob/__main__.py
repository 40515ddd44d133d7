"""``kubectl-tfjob``: the command line of the ``kubectl tfjob`` plugin.

kubectl runs a ``kubectl-tfjob`` found on PATH for ``kubectl tfjob ...`` and hands it the rest of
the arguments, so the plugin parses kubectl's usual flags itself: ``--kubeconfig``, ``--context``,
``-n/--namespace`` and ``-o/--output``, accepted before or after the subcommand.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

import yaml

from kube.errors import ApiError, ConfigError
from kubectl_tfjob.connection import connect, resolve
from kubectl_tfjob.explain import explain
from kubectl_tfjob.logs import LogOptions, ReplicaError, stream_logs
from kubectl_tfjob.render import OUTPUT_FORMATS, as_data, explain_text, status_text
from kubectl_tfjob.status import read_status
from tfjob.constants import KIND, VOLCANO_SCHEDULER_NAME
from tfjob.settings import Settings
from tfjob.wire import TFJob

# A TFJob manifest is a few kilobytes; this bounds what a mistaken -f (a dataset, /dev/zero) costs.
MAX_MANIFEST_BYTES = 4 * 1024 * 1024


def _common(suppress: bool) -> argparse.ArgumentParser:
    # Given twice (before and after the subcommand), so the subcommand's copy must not reset a
    # value given before it: its defaults are SUPPRESS, the top level's are real.
    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--kubeconfig",
        default=default(None),
        help="kubeconfig file (default $KUBECONFIG, else ~/.kube/config)",
    )
    common.add_argument("--context", default=default(None), help="the kubeconfig context to use")
    common.add_argument(
        "-n", "--namespace", default=default(None), help="namespace (default: the context's, else default)"
    )
    common.add_argument(
        "-o", "--output", default=default("text"), choices=OUTPUT_FORMATS, help="text (default), yaml or json"
    )
    return common


def _settings_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gang-scheduler-name",
        default=VOLCANO_SCHEDULER_NAME,
        help='the operator\'s gang scheduler: "volcano" (default), a scheduler-plugins name, or "" for none',
    )


def _priority_class(spec: str) -> tuple[str, int]:
    name, sep, value = spec.partition("=")
    try:
        if not sep or not name:
            raise ValueError(spec)
        return name, int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with an integer VALUE, got {spec!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubectl tfjob",
        description="Explain what tfgang creates for a TFJob, and show why a running one waits.",
        parents=[_common(suppress=False)],
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{explain,status,logs}")
    shared = [_common(suppress=True)]

    explain_parser = commands.add_parser(
        "explain",
        parents=shared,
        help="offline: the defaulted spec, PodGroup, pods, TF_CONFIG and services tfgang creates",
        description=(
            "Offline, with no cluster: take a TFJob as kube-apiserver would (the TFJob CRD's schema, after "
            "pruning unknown fields, dropping nulls and applying defaults), validate it as the webhook does, "
            "and show what the controller "
            "and webhook create for it: the defaulted spec, the PodGroup (minMember, minResources, queue), "
            "each pod's name, labels, annotations and TF_CONFIG, and the headless services. "
            "Exits 1 when the job is invalid."
        ),
    )
    explain_parser.add_argument(
        "-f", "--filename", required=True, help="the TFJob manifest (YAML or JSON; - for stdin)"
    )
    _settings_flags(explain_parser)
    explain_parser.add_argument(
        "--cluster-domain", default="", help="suffix after .svc in TF_CONFIG addresses"
    )
    explain_parser.add_argument(
        "--priority-class",
        action="append",
        default=[],
        type=_priority_class,
        metavar="NAME=VALUE",
        help="a PriorityClass value, for the order of minResources (offline, every class counts as 0)",
    )

    status_parser = commands.add_parser(
        "status",
        parents=shared,
        help="conditions, replicas, restarts against backoffLimit, deadlines, and the PodGroup",
        description=(
            "A TFJob's conditions with their reasons, replica statuses, restarts counted against "
            "backoffLimit, time left before activeDeadlineSeconds or the gang timeout "
            "(schedulingPolicy.scheduleTimeoutSeconds), the PodGroup's phase and why it waits, its pods "
            "and recent events."
        ),
    )
    status_parser.add_argument("name", help="the TFJob's name")
    _settings_flags(status_parser)

    logs_parser = commands.add_parser(
        "logs",
        parents=shared,
        help="the log of one replica, by its role (worker-0, ps-1, chief)",
        description=(
            "Print the log of a replica's tensorflow container. --replica names it by type and index "
            "(worker-0, ps-1; a bare type means index 0); the default is the chief or master, else worker 0."
        ),
    )
    logs_parser.add_argument("name", help="the TFJob's name")
    logs_parser.add_argument("--replica", default=None, help="replica type and index, e.g. worker-0")
    logs_parser.add_argument("-c", "--container", default="tensorflow", help="container (default tensorflow)")
    logs_parser.add_argument(
        "-f", "--follow", action="store_true", help="stream the log until the container ends"
    )
    logs_parser.add_argument("-p", "--previous", action="store_true", help="the previous container's log")
    logs_parser.add_argument("--tail", type=int, default=None, help="only the last N lines")
    return parser


def _read_manifests(filename: str) -> list[TFJob]:
    if filename == "-":
        data = sys.stdin.buffer.read(MAX_MANIFEST_BYTES + 1)
    else:
        with open(filename, "rb") as handle:
            data = handle.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        raise ValueError(f"{filename}: larger than {MAX_MANIFEST_BYTES} bytes, not a TFJob manifest")
    try:
        documents = [doc for doc in yaml.safe_load_all(data) if doc is not None]
    except yaml.YAMLError as exc:
        raise ValueError(f"{filename}: not YAML or JSON: {exc}") from exc
    jobs: list[TFJob] = []
    for document in documents:
        if not isinstance(document, dict) or document.get("kind") != KIND:
            kind = document.get("kind") if isinstance(document, dict) else type(document).__name__
            raise ValueError(f"{filename}: expected TFJob documents, found {kind!r}")
        jobs.append(cast(TFJob, document))
    if not jobs:
        raise ValueError(f"{filename}: no TFJob in the file")
    return jobs


def _print(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def run_explain(args: argparse.Namespace) -> int:
    settings = Settings(gang_scheduler_name=args.gang_scheduler_name, cluster_domain=args.cluster_domain)
    priorities = dict(args.priority_class)
    views = [
        explain(job, settings, namespace=args.namespace or "default", priority_values=priorities)
        for job in _read_manifests(args.filename)
    ]
    if args.output == "text":
        _print("---\n".join(explain_text(view) for view in views))
    elif args.output == "json":
        _print(as_data(views[0], "json") if len(views) == 1 else as_data({"items": views}, "json"))
    else:
        _print("---\n".join(as_data(view, "yaml") for view in views))
    return 0 if all(view["valid"] for view in views) else 1


async def run_status(args: argparse.Namespace) -> int:
    target = resolve(args.kubeconfig, args.context, args.namespace, os.environ)
    settings = Settings(gang_scheduler_name=args.gang_scheduler_name)
    async with connect(target) as api:
        view = await read_status(api, args.name, target.namespace, settings, datetime.now(UTC))
    _print(status_text(view) if args.output == "text" else as_data(view, args.output))
    return 0


async def run_logs(args: argparse.Namespace) -> int:
    target = resolve(args.kubeconfig, args.context, args.namespace, os.environ)
    options = LogOptions(
        replica=args.replica,
        container=args.container,
        follow=args.follow,
        previous=args.previous,
        tail=args.tail,
    )
    async with connect(target) as api:
        async for chunk in stream_logs(api, args.name, target.namespace, options):
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "explain":
            return run_explain(args)
        if args.command == "status":
            return asyncio.run(run_status(args))
        return asyncio.run(run_logs(args))
    except (ConfigError, ReplicaError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ApiError as exc:
        print(f"Error from server ({exc.reason or exc.status}): {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
