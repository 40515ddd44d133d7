"""``tfgang-webhook`` flags; each one may also come from ``TFGANG_<FLAG>`` (the flag wins: ``kube.flags``).

Self-managed certificates are on when ``--cert-secret`` (``TFGANG_CERT_SECRET``) is given or
``--self-managed`` is set: the webhook then keeps that Secret and the named webhook
configurations' caBundle current and writes the certificate into ``--cert-dir`` itself. Otherwise
someone else (cert-manager, a mounted Secret, ``tfgang-certs issue``) provides the files.
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from certs.expiry import DEFAULT_RENEW_BEFORE
from kube.flags import Flags, integer, non_negative_number, number, port, positive_number
from tfjob.constants import VOLCANO_SCHEDULER_NAME
from tfjob.settings import Settings
from webhook.app import DEFAULT_MAX_BODY_BYTES
from webhook.connections import ConnectionLimits

DEFAULT_CERT_SECRET = "tfgang-webhook-certs"
DEFAULT_SERVICE_NAME = "tfgang-webhook"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# Flags named after the ConnectionLimits fields they set (their defaults and types come from it).
_LIMIT_FLAGS = {
    "idle-timeout": "seconds a connection may stay without a request (keep above the API server's 90 s)",
    "header-timeout": "seconds to receive a request's headers once it has begun",
    "body-timeout": "seconds to receive a request body",
    "handshake-timeout": "seconds for a TLS handshake",
    "max-connections": "connections served at once; at the cap one between requests makes room",
    "max-header-bytes": "longest request line or header field",
    "max-headers": "most header fields",
    "max-inflight-body-bytes": "request body bytes read at once, all connections together",
}


@dataclass(frozen=True)
class SelfManagedSettings:
    secret: str
    secret_namespace: str
    service: str
    mutating_webhook_configurations: tuple[str, ...]
    validating_webhook_configurations: tuple[str, ...]
    renew_before_days: int
    check_interval: float


@dataclass(frozen=True)
class WebhookConfig:
    cert_dir: str
    kubeconfig: str | None = None
    host: str = "0.0.0.0"
    port: int = 9443
    ops_port: int = 8081
    namespace: str | None = None
    settings: Settings = field(default_factory=Settings)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    cert_poll_interval: float = 10.0
    api_timeout: float = 3.0
    shutdown_delay: float = 0.0
    log_level: str = "INFO"
    self_managed: SelfManagedSettings | None = None
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    client_ca: str | None = None


def build_parser(environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfgang-webhook",
        description="TFJob admission webhook: TF_CONFIG and gang scheduling for pods, TFJob validation.",
        epilog="Every flag may also be given as TFGANG_<FLAG> (e.g. TFGANG_CERT_DIR); the flag wins.",
    )
    flags = Flags(environ)
    add = functools.partial(flags.add, parser)
    add("--kubeconfig", None, "kubeconfig file (default: the in-cluster service account)")
    add("--cert-dir", None, "directory with tls.crt and tls.key (required)")
    add("--host", "0.0.0.0", "address to serve HTTPS on")
    add("--port", 9443, "HTTPS port for /mutate-pods and /validate-tfjobs", type=port)
    add("--ops-port", 8081, "plain-HTTP port for /healthz, /readyz, /metrics", type=port)
    add("--namespace", None, "only cache TFJobs of this namespace (default: all)")
    add("--gang-scheduler-name", VOLCANO_SCHEDULER_NAME, "volcano, another scheduler, or '' for none")
    add("--cluster-domain", "", "appended after .svc in TF_CONFIG addresses (e.g. cluster.local)")
    add("--max-body-bytes", DEFAULT_MAX_BODY_BYTES, "larger bodies get 413", type=integer)
    add("--cert-poll-interval", 10.0, "seconds between certificate file checks", type=positive_number)
    add("--api-timeout", 3.0, "seconds for a TFJob GET on a cache miss", type=positive_number)
    add("--shutdown-delay", 0.0, "seconds to stay up unready after SIGTERM", type=non_negative_number)
    add("--log-level", "INFO", "DEBUG, INFO, WARNING or ERROR")
    add("--client-ca", None, "PEM CA bundle: serve only callers with a client certificate it signed")
    group = parser.add_argument_group("connections (bounds on what any caller can hold)")
    for flag, help_text in _LIMIT_FLAGS.items():
        default = getattr(ConnectionLimits(), flag.replace("-", "_"))
        convert = integer if isinstance(default, int) else number
        flags.add(group, f"--{flag}", default, help_text, type=convert)
    group = parser.add_argument_group("self-managed certificates")
    in_group = functools.partial(flags.add, group)
    in_group("--self-managed", False, "manage the certificate Secret", switch=True)
    in_group("--cert-secret", None, f"Secret name (enables self-managed; default {DEFAULT_CERT_SECRET})")
    in_group("--cert-secret-namespace", None, "its namespace (default: $POD_NAMESPACE)")
    in_group("--service-name", DEFAULT_SERVICE_NAME, "the webhook Service's name")
    in_group("--mutating-webhook-configuration", None, "inject caBundle here (repeatable)", repeated=True)
    in_group("--validating-webhook-configuration", None, "inject caBundle here (repeatable)", repeated=True)
    in_group("--renew-before-days", DEFAULT_RENEW_BEFORE.days, "renewal margin", type=integer)
    in_group("--cert-check-interval", 600.0, "seconds between Secret checks", type=positive_number)
    return parser


def parse_config(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> WebhookConfig:
    environ = os.environ if environ is None else environ
    parser = build_parser(environ)
    args = parser.parse_args(argv)
    if not args.cert_dir:
        parser.error("--cert-dir (or TFGANG_CERT_DIR) is required")
    if args.log_level.upper() not in LOG_LEVELS:
        parser.error(f"--log-level must be one of {', '.join(LOG_LEVELS)}")
    if args.max_body_bytes < 1024:
        parser.error("--max-body-bytes must be at least 1024")
    for flag in ("idle_timeout", "header_timeout", "body_timeout", "handshake_timeout"):
        if not getattr(args, flag) > 0:
            parser.error(f"--{flag.replace('_', '-')} must be a positive number of seconds")
    if args.max_connections < 1:
        parser.error("--max-connections must be at least 1")
    if args.max_inflight_body_bytes < args.max_body_bytes:
        parser.error("--max-inflight-body-bytes must be at least --max-body-bytes")
    if args.max_header_bytes < 1024 or args.max_headers < 16:
        parser.error("--max-header-bytes must be at least 1024 and --max-headers at least 16")
    self_managed = None
    if args.self_managed or args.cert_secret:
        namespace = args.cert_secret_namespace or environ.get("POD_NAMESPACE") or args.namespace
        if not namespace:
            parser.error("self-managed certificates need --cert-secret-namespace (or POD_NAMESPACE)")
        self_managed = SelfManagedSettings(
            secret=args.cert_secret or DEFAULT_CERT_SECRET,
            secret_namespace=namespace,
            service=args.service_name,
            mutating_webhook_configurations=tuple(args.mutating_webhook_configuration or ()),
            validating_webhook_configurations=tuple(args.validating_webhook_configuration or ()),
            renew_before_days=args.renew_before_days,
            check_interval=args.cert_check_interval,
        )
    return WebhookConfig(
        cert_dir=args.cert_dir,
        kubeconfig=args.kubeconfig or None,
        host=args.host,
        port=args.port,
        ops_port=args.ops_port,
        namespace=args.namespace or None,
        settings=Settings(gang_scheduler_name=args.gang_scheduler_name, cluster_domain=args.cluster_domain),
        max_body_bytes=args.max_body_bytes,
        cert_poll_interval=args.cert_poll_interval,
        api_timeout=args.api_timeout,
        shutdown_delay=args.shutdown_delay,
        log_level=args.log_level.upper(),
        self_managed=self_managed,
        client_ca=args.client_ca or None,
        limits=ConnectionLimits(
            **{flag.replace("-", "_"): getattr(args, flag.replace("-", "_")) for flag in _LIMIT_FLAGS}
        ),
    )

