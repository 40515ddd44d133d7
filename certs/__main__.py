"""``tfgang-certs``: issue a CA and a serving certificate for a webhook Service into a directory.

Every flag can also come from the environment as ``TFGANG_<FLAG>`` (``--out`` -> ``TFGANG_OUT``);
a flag on the command line wins (``kube.flags``).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Mapping, Sequence

from certs.authority import new_ca
from certs.files import write_cert_dir
from certs.pem import InvalidCertificate
from certs.serving import issue_serving_certificate, service_dns_names
from kube.flags import Flags, integer


def build_parser(environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfgang-certs", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    issue = commands.add_parser("issue", help="write ca.crt, tls.crt and tls.key for a Service")
    add = functools.partial(Flags(environ).add, issue)
    add("--service", None, "the webhook Service's name (required)")
    add("--namespace", None, "the Service's namespace (required)")
    add("--out", None, "directory to write ca.crt, tls.crt, tls.key into (required)")
    add("--dns-name", None, "extra DNS SAN (repeatable)", repeated=True)
    add("--ip-address", None, "extra IP SAN (repeatable)", repeated=True)
    add("--valid-days", 365, "serving certificate lifetime", type=integer)
    add("--ca-valid-days", 3650, "CA lifetime", type=integer)
    add("--ca-common-name", "", "CA common name (default: tfgang-<service>-ca)")
    return parser


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    parser = build_parser(environ)
    args = parser.parse_args(argv)
    missing = [flag for flag in ("service", "namespace", "out") if not getattr(args, flag)]
    if missing:
        parser.error("missing " + ", ".join(f"--{flag}" for flag in missing))
    try:
        ca = new_ca(args.ca_common_name or f"tfgang-{args.service}-ca", valid_days=args.ca_valid_days)
        serving = issue_serving_certificate(
            ca,
            service_dns_names(args.service, args.namespace) + list(args.dns_name or []),
            ip_addresses=list(args.ip_address or []),
            valid_days=args.valid_days,
        )
        write_cert_dir(args.out, serving)
    except (ValueError, InvalidCertificate, OSError) as exc:
        print(f"tfgang-certs: {exc}", file=sys.stderr)
        return 1
    print(f"wrote ca.crt, tls.crt, tls.key to {args.out} (valid until {serving.not_after.isoformat()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
