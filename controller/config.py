"""The controller's command line: flags, each also read from a ``TFGANG_*`` environment variable.

A flag given on the command line wins over its environment variable, which wins over the default
(``kube.flags``). Bad values (a port that is not a number, a negative QPS, a boolean that is not
one) are usage errors that name the flag or the variable.
"""

from __future__ import annotations

import argparse
import functools
import os
import socket
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from controller.scope import NamespaceScope, parse_namespace_selector
from kube.flags import Flags, boolean, non_negative_number, port, positive_int, positive_number
from kube.leader import LeaseTerms
from tfjob.settings import Settings

# Upstream's Lease name (training-operator v1.6+), so a mixed rollout never runs two leaders.
DEFAULT_LEASE_NAME = "1ca428e5.training-operator.kubeflow.org"


@dataclass(frozen=True)
class ControllerConfig:
    kubeconfig: str | None = None
    ops_host: str = "0.0.0.0"
    ops_port: int = 8082
    # "" watches every namespace.
    namespace: str = ""
    # The namespaces served, as the webhooks' namespaceSelector says (``controller.scope``).
    scope: NamespaceScope = field(default_factory=NamespaceScope)
    leader_election: LeaseTerms | None = None
    settings: Settings = field(default_factory=Settings)
    kube_api_qps: float = 20.0
    kube_api_burst: int = 30
    workers: int = 4
    log_level: str = "INFO"


def default_identity() -> str:
    """``<hostname>_<uuid>``, the identity form client-go uses for leader election."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def build_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfgang-controller",
        description="Reconcile kubeflow.org/v1 TFJobs into Volcano PodGroups, pods and services.",
    )

    add = functools.partial(Flags(environ).add, parser)
    add("--kubeconfig", None, "kubeconfig file; in-cluster configuration when not given")
    add("--ops-host", "0.0.0.0", "address of the plain-HTTP /healthz, /readyz, /metrics server")
    add("--ops-port", "8082", "port of the ops server", type=port)
    add("--namespace", "", "watch only this namespace; empty watches all")
    add(
        "--namespace-selector",
        "",
        "the admission webhooks' namespaceSelector, a metav1.LabelSelector in JSON: TFJobs in "
        "namespaces whose labels it does not match are left alone (a Warning event OutsideScope "
        "says so); empty serves every namespace",
    )
    add("--leader-elect", False, "run Lease leader election", type=boolean, nargs="?", const="true")
    add("--lease-name", DEFAULT_LEASE_NAME, "name of the leader-election Lease")
    add("--lease-namespace", None, "Lease namespace; default --namespace, else POD_NAMESPACE, else default")
    add("--lease-duration", "15", "seconds a lease is valid without renewal", type=positive_number)
    add("--renew-deadline", "10", "seconds the leader tries to renew before it stops", type=positive_number)
    add("--retry-period", "2", "seconds between leader-election attempts", type=positive_number)
    add("--identity", None, "leader-election identity; default <hostname>_<uuid>")
    add("--gang-scheduler-name", "volcano", '"volcano", a scheduler-plugins name, or "" for no gang')
    add("--cluster-domain", "", "suffix after .svc in TF_CONFIG addresses")
    add(
        "--pending-reason-grace",
        "10",
        "seconds a reason for a job not running (an unschedulable gang, a full queue) must hold "
        "before the job's Created condition reports it",
        type=non_negative_number,
    )
    add("--kube-api-qps", "20", "sustained API requests per second", type=positive_number)
    add("--kube-api-burst", "30", "API request burst", type=positive_int)
    add("--workers", "4", "jobs reconciled concurrently", type=positive_int)
    add(
        "--log-level",
        "INFO",
        "DEBUG, INFO, WARNING or ERROR",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
    )
    return parser


def parse_config(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> ControllerConfig:
    """Parse flags (``argv`` without the program name) over ``TFGANG_*`` variables in ``environ``."""
    environment = os.environ if environ is None else environ
    parser = build_parser(environment)
    args = parser.parse_args(argv)
    namespace: str = args.namespace or ""
    try:
        scope = parse_namespace_selector(args.namespace_selector or "")
    except ValueError as exc:
        parser.error(f"--namespace-selector: {exc}")
    leader_election = None
    if args.leader_elect:
        lease_namespace = args.lease_namespace or namespace or environment.get("POD_NAMESPACE") or "default"
        if args.renew_deadline >= args.lease_duration:
            parser.error("--renew-deadline must be shorter than --lease-duration")
        if args.retry_period >= args.renew_deadline:
            parser.error("--retry-period must be shorter than --renew-deadline")
        leader_election = LeaseTerms(
            name=args.lease_name,
            namespace=lease_namespace,
            identity=args.identity or default_identity(),
            lease_duration=args.lease_duration,
            renew_deadline=args.renew_deadline,
            retry_period=args.retry_period,
        )
    return ControllerConfig(
        kubeconfig=args.kubeconfig or None,
        ops_host=args.ops_host,
        ops_port=args.ops_port,
        namespace=namespace,
        scope=scope,
        leader_election=leader_election,
        settings=Settings(
            gang_scheduler_name=args.gang_scheduler_name,
            cluster_domain=args.cluster_domain,
            pending_reason_grace_seconds=args.pending_reason_grace,
        ),
        kube_api_qps=args.kube_api_qps,
        kube_api_burst=args.kube_api_burst,
        workers=args.workers,
        log_level=args.log_level,
    )
