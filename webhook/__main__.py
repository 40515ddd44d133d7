"""``tfgang-webhook``: run the admission webhook until SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
import logging
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from certs.keeper import KeeperSettings
from certs.pem import InvalidCertificate
from kube import eventloop
from kube.api import KubeApi
from kube.apimetrics import PrometheusRequestMetrics
from kube.client import make_api_client
from kube.errors import ConfigError
from kube.heap import pause_collector_until
from kube.logs import configure_json_logging
from kube.ops import OpsServer
from webhook.app import build_app
from webhook.cache import TFJobCache
from webhook.certmanage import SelfManagedCertificates
from webhook.config import WebhookConfig, parse_config
from webhook.metrics import WebhookMetrics
from webhook.native_heap import HeapTrimmer
from webhook.server import HttpsServer
from webhook.tls import CertificateReloader

logger = logging.getLogger(__name__)


async def serve(config: WebhookConfig, stop: asyncio.Event) -> None:
    """Run every part of the webhook until ``stop`` is set."""
    registry = CollectorRegistry()
    metrics = WebhookMetrics(registry)

    def certificate_loaded(not_after: datetime.datetime) -> None:
        metrics.certificate_expiry.set(not_after.timestamp())
        metrics.certificate_reloads.inc()

    reloader = CertificateReloader(config.cert_dir, on_reload=certificate_loaded, client_ca=config.client_ca)
    reloader.reload_if_changed()
    client = await make_api_client(config.kubeconfig)
    api_requests = PrometheusRequestMetrics(registry)
    api = KubeApi(
        client, user_agent="tfgang-webhook", request_timeout=config.api_timeout, on_request=api_requests
    )
    # Same client, separate rate limiter: the watch never starves GETs made on a cache miss.
    list_api = KubeApi(client, user_agent="tfgang-webhook", on_request=api_requests)
    cache = TFJobCache(api, namespace=config.namespace, list_api=list_api)
    metrics.cached_tfjobs.set_function(lambda: len(cache.store))
    shutting_down = False

    ops = OpsServer(registry, host=config.host, port=config.ops_port)
    ops.add_readiness_check("certificate", lambda: reloader.loaded)
    ops.add_readiness_check("tfjob-cache", lambda: cache.synced)
    ops.add_readiness_check("not-shutting-down", lambda: not shutting_down)
    # Coroutine functions, called only once the ports are bound (nothing left un-awaited on failure).
    background: list[Callable[[], Coroutine[Any, Any, None]]] = [
        cache.run,
        functools.partial(reloader.watch, config.cert_poll_interval),
        # The heap a burst of TLS connections (256 KiB read buffer each) left free goes back.
        HeapTrimmer().run,
    ]
    if config.self_managed is not None:
        managed = config.self_managed
        self_managed = SelfManagedCertificates(
            api,
            KeeperSettings(
                secret_name=managed.secret,
                namespace=managed.secret_namespace,
                service=managed.service,
                mutating_webhook_configurations=managed.mutating_webhook_configurations,
                validating_webhook_configurations=managed.validating_webhook_configurations,
                renew_before=datetime.timedelta(days=managed.renew_before_days),
            ),
            config.cert_dir,
            reloader,
            check_interval=managed.check_interval,
        )
        ops.add_readiness_check("certificate-secret", lambda: self_managed.ready)
        background.append(self_managed.run)

    app = build_app(
        cache,
        config.settings,
        metrics,
        max_body_bytes=config.max_body_bytes,
        body_timeout=config.limits.body_timeout,
        max_inflight_body_bytes=config.limits.max_inflight_body_bytes,
    )
    server = HttpsServer(app, reloader.context, host=config.host, port=config.port, limits=config.limits)
    # The first list's TFJob views live as long as the process: no collections walk them while
    # they are decoded, and none after (they were also the tail of the latency at 1,000/s).
    collector_paused = pause_collector_until(cache.wait_synced())
    try:
        # Bound before the background tasks start, so a port in use is a plain OSError (exit 1).
        await ops.start()
        await server.start()
        async with asyncio.TaskGroup() as tasks:
            running = [tasks.create_task(start()) for start in background]
            await stop.wait()
            logger.info("stopping: unready for %.1fs, then closing", config.shutdown_delay)
            # Unready at once, so the Service (or balancer) stops sending new connections here;
            # meanwhile every answer carries Connection: close, so kube-apiserver's kept-alive
            # connections move to the other replicas one request at a time, never under one.
            # The listener keeps accepting: a connection routed here just before the endpoint
            # went is served. After the delay the server stops (HttpsServer.stop): connections
            # left idle are closed, requests under way answered, then the process exits.
            shutting_down = True
            server.drain()
            await asyncio.sleep(config.shutdown_delay)
            for task in running:
                task.cancel()
    finally:
        collector_paused.cancel()
        await server.stop()
        await ops.stop()
        await api.close()


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_config(argv)
    configure_json_logging(config.log_level)
    try:
        eventloop.run(_run(config))
    except (ConfigError, InvalidCertificate) as exc:
        logger.error("cannot start: %s", exc)
        return 1
    except OSError as exc:
        logger.error("cannot serve: %s", exc)
        return 1
    return 0


async def _run(config: WebhookConfig) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    logger.info("starting on %s.%s", type(loop).__module__, type(loop).__name__)
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    await serve(config, stop)


if __name__ == "__main__":
    sys.exit(main())
