"""Keep a webhook's certificate Secret and its webhook configurations' ``caBundle`` current.

This is the I/O half of ``certs`` (self-managed mode). One call to ``CertificateKeeper.reconcile``:

1. reads the Secret; creates it when missing (a racing replica's 409 means: read theirs), replaces
   it when its content is unusable, its serving certificate is due for renewal or does not cover
   the Service's names, or its CA is due. Writes are guarded by resourceVersion, so two replicas
   never overwrite each other: the loser of a race re-reads and adopts the winner's material;
2. sets ``clientConfig.caBundle`` of every webhook in the named Mutating/Validating
   WebhookConfigurations to the Secret's ``ca.crt`` (GET, then a resourceVersion-guarded PUT).

A serving certificate is renewed under the same CA (kept in the Secret's ``ca.key``), so the bundle
the API server trusts does not change. When the CA itself is renewed, the new bundle lists the new
CA first and the old one after it until the old one expires, so servers still presenting a leaf of
the old CA stay trusted during the switch.
"""

from __future__ import annotations

import base64
import datetime
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from certs.authority import new_ca
from certs.expiry import DEFAULT_RENEW_BEFORE, needs_renewal
from certs.pem import InvalidCertificate, certificate_pem, load_certificate, load_certificates
from certs.secret import StoredCertificates, decode_secret_data, encode_secret_data, secret_manifest
from certs.serving import ServingCertificate, dns_names_of, issue_serving_certificate, service_dns_names
from kube.api import KubeApi
from kube.errors import AlreadyExists, Conflict, NotFound
from kube.resources import (
    MUTATING_WEBHOOK_CONFIGURATIONS,
    SECRETS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    Resource,
)

logger = logging.getLogger(__name__)

# Optimistic-concurrency retries per reconcile: enough for a few replicas racing at startup.
_MAX_ATTEMPTS = 5
# A CA lives ten years; renew it a year ahead so the old and new bundles overlap generously.
CA_RENEW_BEFORE = datetime.timedelta(days=365)


@dataclass(frozen=True)
class KeeperSettings:
    secret_name: str
    namespace: str
    service: str
    mutating_webhook_configurations: tuple[str, ...] = ()
    validating_webhook_configurations: tuple[str, ...] = ()
    extra_dns_names: tuple[str, ...] = ()
    serving_valid_days: int = 365
    ca_valid_days: int = 3650
    renew_before: datetime.timedelta = DEFAULT_RENEW_BEFORE
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def dns_names(self) -> list[str]:
        return service_dns_names(self.service, self.namespace) + list(self.extra_dns_names)


@dataclass(frozen=True)
class KeeperResult:
    certificates: StoredCertificates
    secret_written: bool
    # Configurations named in the settings that do not exist (yet): not ready until they do.
    missing_configurations: tuple[str, ...]
    webhooks_injected: int


class CertificateKeeper:
    def __init__(self, api: KubeApi, settings: KeeperSettings) -> None:
        self._api = api
        self._settings = settings

    async def reconcile(self, now: datetime.datetime) -> KeeperResult:
        stored, written = await self.ensure_secret(now)
        injected, missing = await self.inject_ca_bundle(stored.serving.ca_pem)
        return KeeperResult(stored, written, tuple(missing), injected)

    # -- the Secret ----------------------------------------------------------------------------

    async def ensure_secret(self, now: datetime.datetime) -> tuple[StoredCertificates, bool]:
        """The Secret's certificates, after creating or renewing them if needed; True if written."""
        settings = self._settings
        for _ in range(_MAX_ATTEMPTS):
            try:
                secret = await self._api.get(SECRETS, settings.secret_name, settings.namespace)
            except NotFound:
                fresh = self._issue(None, now)
                body = secret_manifest(
                    settings.secret_name, settings.namespace, fresh.serving, fresh.ca, labels=settings.labels
                )
                try:
                    await self._api.create(SECRETS, body, settings.namespace)
                except AlreadyExists:
                    continue
                logger.info("created certificate Secret %s/%s", settings.namespace, settings.secret_name)
                return fresh, True
            current = self._decode(secret)
            if current is not None and not self._due(current, now):
                return current, False
            fresh = self._issue(current, now)
            secret["type"] = secret.get("type") or "kubernetes.io/tls"
            secret["data"] = {**(secret.get("data") or {}), **encode_secret_data(fresh.serving, fresh.ca)}
            try:
                await self._api.replace(SECRETS, settings.secret_name, secret, settings.namespace)
            except (Conflict, NotFound):
                continue
            logger.info(
                "renewed certificate Secret %s/%s, valid until %s",
                settings.namespace,
                settings.secret_name,
                fresh.serving.not_after.isoformat(),
            )
            return fresh, True
        raise Conflict(409, "Conflict", f"Secret {settings.secret_name} kept changing; retry later")

    def _decode(self, secret: dict[str, Any]) -> StoredCertificates | None:
        try:
            return decode_secret_data(secret.get("data"))
        except InvalidCertificate as exc:
            logger.warning(
                "certificate Secret %s is unusable, replacing it: %s", self._settings.secret_name, exc
            )
            return None

    def _due(self, stored: StoredCertificates, now: datetime.datetime) -> bool:
        settings = self._settings
        if stored.ca is None or needs_renewal(stored.ca.cert_pem, now, CA_RENEW_BEFORE):
            return True
        if needs_renewal(stored.serving.cert_pem, now, settings.renew_before):
            return True
        return not set(settings.dns_names) <= set(dns_names_of(stored.serving.cert_pem))

    def _issue(self, current: StoredCertificates | None, now: datetime.datetime) -> StoredCertificates:
        settings = self._settings
        ca = current.ca if current is not None else None
        if ca is None or needs_renewal(ca.cert_pem, now, CA_RENEW_BEFORE):
            ca = new_ca(f"tfgang-{settings.service}-ca", valid_days=settings.ca_valid_days, now=now)
        # Keep trusting every CA the previous bundle listed while it is valid: replicas still
        # serving a leaf of an older CA must stay verifiable until they load the new one.
        previous = load_certificates(current.serving.ca_pem) if current is not None else []
        ca_pem = certificate_pem(load_certificate(ca.cert_pem))
        bundle_tail = [
            certificate
            for certificate in previous
            if certificate.not_valid_after_utc > now and certificate_pem(certificate) != ca_pem
        ]
        serving = issue_serving_certificate(
            ca, settings.dns_names, valid_days=settings.serving_valid_days, now=now
        )
        bundle = ca.cert_pem + b"".join(certificate_pem(certificate) for certificate in bundle_tail)
        serving = ServingCertificate(serving.cert_pem, serving.key_pem, bundle, serving.not_after)
        return StoredCertificates(serving=serving, ca=ca)

    # -- caBundle ------------------------------------------------------------------------------

    async def inject_ca_bundle(self, ca_pem: bytes) -> tuple[int, list[str]]:
        """Set every named configuration's webhooks' caBundle; the count changed and names missing."""
        bundle = base64.b64encode(ca_pem).decode("ascii")
        injected = 0
        missing: list[str] = []
        targets: list[tuple[Resource, Sequence[str]]] = [
            (MUTATING_WEBHOOK_CONFIGURATIONS, self._settings.mutating_webhook_configurations),
            (VALIDATING_WEBHOOK_CONFIGURATIONS, self._settings.validating_webhook_configurations),
        ]
        for resource, names in targets:
            for name in names:
                changed = await self._inject_one(resource, name, bundle)
                if changed is None:
                    missing.append(name)
                else:
                    injected += changed
        return injected, missing

    async def _inject_one(self, resource: Resource, name: str, bundle: str) -> int | None:
        for _ in range(_MAX_ATTEMPTS):
            try:
                configuration = await self._api.get(resource, name)
            except NotFound:
                logger.warning("%s %s does not exist; caBundle not injected", resource.kind, name)
                return None
            webhooks = configuration.get("webhooks") or []
            changed = 0
            for webhook in webhooks:
                client_config = webhook.setdefault("clientConfig", {})
                if client_config.get("caBundle") != bundle:
                    client_config["caBundle"] = bundle
                    changed += 1
            if not changed:
                return 0
            try:
                await self._api.replace(resource, name, configuration)
            except Conflict:
                continue
            except NotFound:
                return None
            logger.info("injected caBundle into %d webhook(s) of %s %s", changed, resource.kind, name)
            return changed
        raise Conflict(409, "Conflict", f"{resource.kind} {name} kept changing; retry later")
