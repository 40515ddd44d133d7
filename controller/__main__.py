"""`tfgang-controller`: reconcile TFJobs into Volcano PodGroups, pods and services.

Exit codes: 0 after a graceful stop (SIGTERM/SIGINT), 1 when leadership was lost or the ops port
cannot be bound, 2 for bad flags or an unusable kubeconfig.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Sequence

from controller.config import ControllerConfig, parse_config
from controller.manager import Controller, LeadershipLost
from controller.metrics import ControllerMetrics
from kube import eventloop
from kube.api import KubeApi
from kube.client import make_api_client
from kube.errors import ConfigError
from kube.heap import collect_less_often, pause_collector_until
from kube.logs import configure_json_logging
from kube.ops import OpsServer
from tfjob.constants import CONTROLLER_NAME

logger = logging.getLogger(__name__)


async def serve(config: ControllerConfig, stop: asyncio.Event) -> int:
    """Run the controller and its ops server until ``stop`` is set; the process exit code."""
    try:
        client = await make_api_client(config.kubeconfig)
    except ConfigError as exc:
        logger.error("%s", exc)
        return 2
    metrics = ControllerMetrics()
    api = KubeApi(
        client,
        qps=config.kube_api_qps,
        burst=config.kube_api_burst,
        user_agent=CONTROLLER_NAME,
        on_request=metrics.api_requests,
    )
    controller = Controller(api, config, metrics=metrics)
    collect_less_often()
    collector_paused = pause_collector_until(controller.caches.wait_synced())
    ops = OpsServer(controller.metrics.registry, host=config.ops_host, port=config.ops_port)
    ops.add_readiness_check("caches-synced", lambda: controller.ready)
    try:
        try:
            await ops.start()
        except OSError as exc:
            logger.error(
                "cannot serve /healthz, /readyz, /metrics on %s:%d: %s", config.ops_host, config.ops_port, exc
            )
            return 1
        logger.info("ops server on %s", ops.url)
        await controller.run(stop)
    except LeadershipLost as exc:
        logger.error("%s; exiting so that a fresh start rebuilds everything", exc)
        return 1
    finally:
        collector_paused.cancel()
        await ops.stop()
        await api.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_config(argv)
    configure_json_logging(config.log_level)

    async def run() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        return await serve(config, stop)

    return eventloop.run(run())


if __name__ == "__main__":
    sys.exit(main())
