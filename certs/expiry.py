"""When a certificate must be replaced."""

from __future__ import annotations

import datetime

from certs.pem import load_certificate

# Renew a year-long serving certificate a month early: enough margin for a few failed attempts
# by a process that checks every few minutes, and for kubelet's slow Secret volume updates.
DEFAULT_RENEW_BEFORE = datetime.timedelta(days=30)


def not_after(cert_pem: bytes) -> datetime.datetime:
    return load_certificate(cert_pem).not_valid_after_utc


def not_before(cert_pem: bytes) -> datetime.datetime:
    return load_certificate(cert_pem).not_valid_before_utc


def needs_renewal(
    cert_pem: bytes, now: datetime.datetime, before: datetime.timedelta = DEFAULT_RENEW_BEFORE
) -> bool:
    """True once ``now`` is within ``before`` of the expiry, or past it.

    The margin is capped at a third of the certificate's lifetime, so a short-lived certificate
    (say a day, in tests) is not considered due the moment it is issued.
    """
    certificate = load_certificate(cert_pem)
    lifetime = certificate.not_valid_after_utc - certificate.not_valid_before_utc
    margin = min(before, lifetime / 3)
    return now >= certificate.not_valid_after_utc - margin


def seconds_until_expiry(cert_pem: bytes, now: datetime.datetime) -> float:
    return (not_after(cert_pem) - now).total_seconds()
