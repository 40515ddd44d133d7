"""`tfgang-sandbox scheduler`: the Volcano-like gang scheduler against any API server."""

from __future__ import annotations

import argparse
import logging
import os

from kube.api import KubeApi
from kube.client import make_api_client
from kube.events import EventRecorder
from sandbox.foreground import run_in_foreground
from sandbox.scheduler.runner import Scheduler, SchedulerOptions
from sandbox.scheduler.snapshot import DEFAULT_SCHEDULER_NAME, VOLCANO_SCHEDULER_NAME

logger = logging.getLogger(__name__)

COMPONENT = "volcano"


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from error
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        default=os.environ.get("TFGANG_KUBECONFIG") or os.environ.get("KUBECONFIG"),
        help="kubeconfig file (env TFGANG_KUBECONFIG, then KUBECONFIG)",
    )
    parser.add_argument("--period", type=_positive, default=1.0, help="seconds between sessions (default 1)")
    parser.add_argument(
        "--min-interval",
        type=_positive,
        default=None,
        help="least seconds between sessions when objects change (default: the period, as Volcano)",
    )
    parser.add_argument(
        "--overcommit-factor", type=_positive, default=1.2, help="enqueue overcommit (default 1.2)"
    )
    parser.add_argument(
        "--scheduler-name",
        action="append",
        dest="scheduler_names",
        metavar="NAME",
        help=f"gang-scheduled pods' schedulerName; repeatable (default {VOLCANO_SCHEDULER_NAME})",
    )
    parser.add_argument(
        "--plain-scheduler-name",
        action="append",
        dest="plain_names",
        metavar="NAME",
        help=f"schedulerName bound one pod at a time; repeatable (default {DEFAULT_SCHEDULER_NAME})",
    )
    parser.add_argument(
        "--default-queue", default="default", help="queue created when missing (default default)"
    )
    parser.add_argument(
        "--log-level",
        default=os.environ.get("TFGANG_LOG_LEVEL", "INFO"),
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
    )


def options_from(args: argparse.Namespace) -> SchedulerOptions:
    return SchedulerOptions(
        period=args.period,
        min_interval=args.min_interval if args.min_interval is not None else args.period,
        overcommit_factor=args.overcommit_factor,
        gang_scheduler_names=frozenset(args.scheduler_names or [VOLCANO_SCHEDULER_NAME]),
        plain_scheduler_names=frozenset(args.plain_names or [DEFAULT_SCHEDULER_NAME]),
        default_queue=args.default_queue,
    )


async def serve(kubeconfig: str | None, options: SchedulerOptions) -> None:
    api = KubeApi(await make_api_client(kubeconfig), user_agent="tfgang-sandbox-scheduler")
    recorder = EventRecorder(api, COMPONENT)
    plain_recorder = EventRecorder(api, DEFAULT_SCHEDULER_NAME)
    try:
        await Scheduler(api, recorder, options, plain_recorder=plain_recorder).run()
    finally:
        await recorder.close()
        await plain_recorder.close()
        await api.close()


def run(args: argparse.Namespace) -> int:
    return run_in_foreground(
        serve(args.kubeconfig, options_from(args)), component="scheduler", log_level=args.log_level
    )
