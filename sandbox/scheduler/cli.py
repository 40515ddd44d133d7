"""`tfgang-sandbox scheduler`: the Volcano-like gang scheduler against any API server."""

from __future__ import annotations

import argparse
import functools
import logging

from kube.api import KubeApi
from kube.client import make_api_client
from kube.events import EventRecorder
from kube.flags import Flags, positive_number
from sandbox.foreground import run_in_foreground
from sandbox.scheduler.runner import Scheduler, SchedulerOptions
from sandbox.scheduler.snapshot import SchedulerName

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = functools.partial(Flags().add, parser)
    add("--kubeconfig", None, "kubeconfig file", also=("KUBECONFIG",))
    add("--period", 1.0, "seconds between sessions", type=positive_number)
    add(
        "--min-interval",
        None,
        "least seconds between sessions when objects change (default: the period, as Volcano)",
        type=positive_number,
    )
    add("--overcommit-factor", 1.2, "enqueue overcommit", type=positive_number)
    add(
        "--scheduler-name",
        None,
        f"gang-scheduled pods' schedulerName; repeatable (default {SchedulerName.VOLCANO})",
        repeated=True,
        dest="scheduler_names",
        metavar="NAME",
    )
    add(
        "--plain-scheduler-name",
        None,
        f"schedulerName bound one pod at a time; repeatable (default {SchedulerName.DEFAULT})",
        repeated=True,
        dest="plain_names",
        metavar="NAME",
    )
    add("--default-queue", "default", "queue created when missing")
    add("--log-level", "INFO", "log level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def options_from(args: argparse.Namespace) -> SchedulerOptions:
    return SchedulerOptions(
        period=args.period,
        min_interval=args.min_interval if args.min_interval is not None else args.period,
        overcommit_factor=args.overcommit_factor,
        gang_scheduler_names=frozenset(args.scheduler_names or [SchedulerName.VOLCANO]),
        plain_scheduler_names=frozenset(args.plain_names or [SchedulerName.DEFAULT]),
        default_queue=args.default_queue,
    )


async def serve(kubeconfig: str | None, options: SchedulerOptions) -> None:
    api = KubeApi(await make_api_client(kubeconfig), user_agent="tfgang-sandbox-scheduler")
    recorder = EventRecorder(api, SchedulerName.VOLCANO)
    plain_recorder = EventRecorder(api, SchedulerName.DEFAULT)
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
