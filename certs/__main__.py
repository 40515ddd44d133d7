"""``tfgang-certs``: issue a CA and a serving certificate for a webhook Service into a directory.

Every flag can also come from the environment as ``TFGANG_<FLAG>`` (``--out`` -> ``TFGANG_OUT``);
a flag on the command line wins.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence

from certs.authority import new_ca
from certs.files import write_cert_dir
from certs.pem import InvalidCertificate
from certs.serving import issue_serving_certificate, service_dns_names

ENV_PREFIX = "TFGANG_"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfgang-certs", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    issue = commands.add_parser("issue", help="write ca.crt, tls.crt and tls.key for a Service")
    issue.add_argument("--service", help="the webhook Service's name (required)")
    issue.add_argument("--namespace", help="the Service's namespace (required)")
    issue.add_argument("--out", help="directory to write ca.crt, tls.crt, tls.key into (required)")
    issue.add_argument("--dns-name", action="append", default=None, help="extra DNS SAN (repeatable)")
    issue.add_argument("--ip-address", action="append", default=None, help="extra IP SAN (repeatable)")
    issue.add_argument("--valid-days", type=int, default=365, help="serving certificate lifetime")
    issue.add_argument("--ca-valid-days", type=int, default=3650, help="CA lifetime")
    issue.add_argument("--ca-common-name", default="", help="CA common name (default: tfgang-<service>-ca)")
    return parser


def apply_environment(
    parser: argparse.ArgumentParser, args: argparse.Namespace, environ: Mapping[str, str]
) -> argparse.Namespace:
    """Fill flags left at their default from ``TFGANG_*`` variables, converted like the flag."""
    actions = [action for action in _all_actions(parser) if action.option_strings]
    for action in actions:
        value = environ.get(ENV_PREFIX + action.dest.upper())
        if value is None or getattr(args, action.dest, None) != action.default:
            continue
        if isinstance(action, argparse._AppendAction):
            converted: object = [item for item in value.split(",") if item]
        elif action.type is int:
            try:
                converted = int(value)
            except ValueError:
                parser.error(f"{ENV_PREFIX + action.dest.upper()}={value!r} is not an integer")
        else:
            converted = value
        setattr(args, action.dest, converted)
    return args


def _all_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    actions = list(parser._actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                actions += subparser._actions
    return actions


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    parser = build_parser()
    args = apply_environment(parser, parser.parse_args(argv), os.environ if environ is None else environ)
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
