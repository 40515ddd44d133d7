"""The serving SSLContext, reloaded in place when the certificate files change.

The server keeps the one ``ssl.SSLContext`` it was given; calling ``load_cert_chain`` on it
again makes every NEW handshake present the new certificate, while connections already
established keep theirs, so no request in flight fails and nothing restarts.

Rotation may be done by anyone: kubelet swapping a mounted Secret's ``..data`` symlink, cert-manager,
or the self-managed mode writing files. The files are polled (a cheap ``stat``); a changed pair is
first checked (parsable, key matches certificate, loadable by ssl into a scratch context) and only
then loaded into the live context, from a private copy of exactly the bytes that were checked. A
pair caught half-written is skipped and retried on the next poll; the old certificate stays.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path

from certs.files import CERT_FILE, KEY_FILE
from certs.pem import InvalidCertificate, key_matches_certificate, load_certificate, load_private_key

logger = logging.getLogger(__name__)

Fingerprint = tuple[tuple[int, int, int], ...]


def new_server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def require_client_certificates(context: ssl.SSLContext, client_ca: Path | str) -> None:
    """Accept only callers presenting a certificate signed by ``client_ca`` (PEM bundle), e.g.
    kube-apiserver configured with a client certificate for this webhook (see docs/deployment.md).
    Read once: a new client CA takes a restart."""
    try:
        context.load_verify_locations(cafile=str(client_ca))
    except (OSError, ssl.SSLError) as exc:
        raise InvalidCertificate(f"cannot load the client CA {client_ca}: {exc}") from exc
    context.verify_mode = ssl.CERT_REQUIRED


class CertificateReloader:
    def __init__(
        self,
        cert_dir: Path | str,
        *,
        cert_file: str = CERT_FILE,
        key_file: str = KEY_FILE,
        on_reload: Callable[[datetime.datetime], None] | None = None,
        client_ca: Path | str | None = None,
    ) -> None:
        self._on_reload = on_reload
        self._failed_fingerprint: Fingerprint | None = None
        self._cert_path = Path(cert_dir) / cert_file
        self._key_path = Path(cert_dir) / key_file
        self.context = new_server_context()
        if client_ca is not None:
            require_client_certificates(self.context, client_ca)
        self._fingerprint: Fingerprint | None = None
        self.loaded = False
        self.not_after: datetime.datetime | None = None
        self.reloads = 0
        self.failures = 0

    def reload_if_changed(self) -> bool:
        """Load the files into the live context if they changed and are a valid pair; True if loaded."""
        try:
            fingerprint = self._stat()
        except OSError as exc:
            if self._fingerprint != ():
                logger.warning("serving certificate not available yet: %s", exc)
                self._fingerprint = ()
            return False
        if fingerprint == self._fingerprint:
            return False
        try:
            cert_pem = self._cert_path.read_bytes()
            key_pem = self._key_path.read_bytes()
            certificate = load_certificate(cert_pem)
            if not key_matches_certificate(load_private_key(key_pem), certificate):
                raise InvalidCertificate(f"{self._key_path} does not match {self._cert_path}")
            self._load(cert_pem, key_pem)
        except (OSError, InvalidCertificate, ssl.SSLError) as exc:
            # Often a rotation caught between the key and the certificate: the next poll retries
            # (the fingerprint is not recorded), but a lasting problem is logged once.
            self.failures += 1
            if fingerprint != self._failed_fingerprint:
                logger.warning("serving certificate not (re)loaded, keeping the current one: %s", exc)
                self._failed_fingerprint = fingerprint
            return False
        self._fingerprint = fingerprint
        self._failed_fingerprint = None
        self.loaded = True
        self.not_after = certificate.not_valid_after_utc
        self.reloads += 1
        if self._on_reload is not None:
            self._on_reload(self.not_after)
        logger.info(
            "serving certificate loaded from %s, valid until %s", self._cert_path, self.not_after.isoformat()
        )
        return True

    async def watch(self, interval: float) -> None:
        """Poll the files every ``interval`` seconds until cancelled."""
        while True:
            self.reload_if_changed()
            await asyncio.sleep(interval)

    def _stat(self) -> Fingerprint:
        stats = [os.stat(path) for path in (self._cert_path, self._key_path)]
        return tuple((stat.st_ino, stat.st_size, stat.st_mtime_ns) for stat in stats)

    def _load(self, cert_pem: bytes, key_pem: bytes) -> None:
        # ssl reads certificates only from files: a private copy pins exactly the checked bytes.
        with tempfile.TemporaryDirectory(prefix="tfgang-tls-") as directory:
            cert_copy = Path(directory) / "tls.crt"
            key_copy = Path(directory) / "tls.key"
            cert_copy.write_bytes(cert_pem)
            key_copy.touch(mode=0o600)
            key_copy.write_bytes(key_pem)
            new_server_context().load_cert_chain(cert_copy, key_copy)
            self.context.load_cert_chain(cert_copy, key_copy)
