"""Self-managed mode: keep the certificate Secret and caBundle current, and serve what the Secret holds.

Each round runs ``certs.keeper.CertificateKeeper.reconcile`` (create or renew the Secret, inject
``caBundle``), writes the Secret's certificate into the cert dir when it differs from what is
there, and has the reloader pick it up at once. Rounds repeat every ``check_interval`` seconds, or
every ``retry_interval`` while something is not done (API unreachable, a webhook configuration
not created yet). Replicas race safely: the keeper's writes are resourceVersion-guarded and every
replica serves whatever the Secret ends up holding.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable
from pathlib import Path

from certs.files import CertificateFilesMissing, read_cert_dir, write_cert_dir
from certs.keeper import CertificateKeeper, KeeperSettings
from certs.pem import InvalidCertificate
from kube.api import KubeApi
from kube.errors import ApiError
from webhook.tls import CertificateReloader

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime.datetime]


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class SelfManagedCertificates:
    def __init__(
        self,
        api: KubeApi,
        settings: KeeperSettings,
        cert_dir: Path | str,
        reloader: CertificateReloader,
        *,
        check_interval: float = 600.0,
        retry_interval: float = 5.0,
        clock: Clock = _utcnow,
    ) -> None:
        self._keeper = CertificateKeeper(api, settings)
        self._cert_dir = Path(cert_dir)
        self._reloader = reloader
        self._check_interval = check_interval
        self._retry_interval = retry_interval
        self._clock = clock
        # Ready once the Secret's certificate was served and every named configuration had caBundle.
        self.ready = False
        self.rounds = 0

    async def run_once(self) -> bool:
        """One round; True when everything is in place."""
        self.rounds += 1
        try:
            result = await self._keeper.reconcile(self._clock())
        except (ApiError, InvalidCertificate, OSError) as exc:
            logger.warning("self-managed certificates: round failed, retrying: %s", exc)
            return False
        serving = result.certificates.serving
        try:
            current = read_cert_dir(self._cert_dir)
        except (CertificateFilesMissing, InvalidCertificate):
            current = None
        if current != serving:
            try:
                write_cert_dir(self._cert_dir, serving)
            except OSError as exc:
                logger.error("cannot write the serving certificate to %s: %s", self._cert_dir, exc)
                return False
            logger.info("wrote the Secret's serving certificate to %s", self._cert_dir)
        self._reloader.reload_if_changed()
        if result.missing_configurations:
            logger.warning(
                "caBundle not injected: webhook configuration(s) %s do not exist yet",
                ", ".join(result.missing_configurations),
            )
        return self._reloader.loaded and not result.missing_configurations

    async def run(self) -> None:
        while True:
            done = await self.run_once()
            # Sticky: once served and injected, a later failed round (API blip) must not turn
            # every replica unready while the certificate in use is still valid.
            self.ready = self.ready or done
            await asyncio.sleep(self._check_interval if done else self._retry_interval)
