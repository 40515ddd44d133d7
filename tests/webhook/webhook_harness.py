"""A real webhook server on loopback over TLS, for tests and the benchmark.

``running_webhook`` serves in the current event loop; ``ThreadedWebhook`` serves from its own
thread and loop, for synchronous callers (hypothesis, http.client).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from certs.authority import CertificateAuthority, new_ca
from certs.files import write_cert_dir
from certs.serving import ServingCertificate, issue_serving_certificate
from tfjob.settings import Settings
from webhook.app import DEFAULT_MAX_BODY_BYTES, build_app
from webhook.cache import JobLookup, StaticJobs
from webhook.connections import ConnectionLimits
from webhook.metrics import WebhookMetrics
from webhook.server import HttpsServer
from webhook.tls import CertificateReloader


def loopback_certificate(ca: CertificateAuthority) -> ServingCertificate:
    return issue_serving_certificate(ca, ["localhost"], ip_addresses=["127.0.0.1"], valid_days=2)


def make_cert_dir(directory: Path) -> CertificateAuthority:
    ca = new_ca("tfgang-test-ca", valid_days=2)
    write_cert_dir(directory, loopback_certificate(ca))
    return ca


def client_context(ca: CertificateAuthority) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca.cert_pem.decode("ascii"))


@dataclass
class RunningWebhook:
    port: int
    reloader: CertificateReloader
    registry: CollectorRegistry
    server: HttpsServer | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"


@contextlib.asynccontextmanager
async def running_webhook(
    cert_dir: Path,
    jobs: JobLookup | list[dict[str, Any]] = (),  # type: ignore[assignment]
    settings: Settings | None = None,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    limits: ConnectionLimits | None = None,
    client_ca: Path | None = None,
) -> AsyncIterator[RunningWebhook]:
    lookup = StaticJobs(list(jobs)) if isinstance(jobs, list | tuple) else jobs
    reloader = CertificateReloader(cert_dir, client_ca=client_ca)
    if not reloader.reload_if_changed():
        raise RuntimeError(f"no certificate in {cert_dir}")
    registry = CollectorRegistry()
    limits = limits or ConnectionLimits()
    app = build_app(
        lookup,
        settings or Settings(),
        WebhookMetrics(registry),
        max_body_bytes=max_body_bytes,
        body_timeout=limits.body_timeout,
        max_inflight_body_bytes=limits.max_inflight_body_bytes,
    )
    server = HttpsServer(app, reloader.context, host="127.0.0.1", port=0, limits=limits)
    await server.start()
    try:
        yield RunningWebhook(server.port, reloader, registry, server)
    finally:
        await server.stop()


class ThreadedWebhook:
    """``running_webhook`` in a background thread; use as a context manager."""

    def __init__(self, cert_dir: Path, jobs: list[dict[str, Any]], settings: Settings | None = None) -> None:
        self._arguments = (cert_dir, jobs, settings)
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(self._serve(),), daemon=True
        )
        self.webhook: RunningWebhook | None = None
        self._error: BaseException | None = None

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with running_webhook(*self._arguments) as webhook:
                self.webhook = webhook
                self._started.set()
                await self._stop.wait()
        except BaseException as exc:
            self._error = exc
            self._started.set()

    def __enter__(self) -> RunningWebhook:
        self._thread.start()
        self._started.wait(timeout=10)
        if self.webhook is None:
            raise RuntimeError(f"webhook did not start: {self._error!r}")
        return self.webhook

    def __exit__(self, *exc_info: object) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)
        self._loop.close()
