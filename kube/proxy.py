"""Which proxy the environment names for the API server, decided as kubectl (Go's ``httpproxy``) does.

Public API:

- ``proxy_from_environment(server, environ=os.environ) -> str | None`` -- the proxy URL for
  ``server`` (an ``https://`` or ``http://`` URL), or None when none applies.

Why this is ours: aiohttp's ``trust_env`` asks the environment (and ``.netrc``) again on every
request, and Python's ``proxy_bypass`` knows no CIDR in ``NO_PROXY``. kubectl's rules, decided once
per client:

- ``HTTPS_PROXY`` (else ``https_proxy``) for an https server, ``HTTP_PROXY``/``http_proxy`` for
  http; a proxy written without a scheme is ``http://``;
- never for ``localhost`` or a loopback address;
- ``NO_PROXY`` (else ``no_proxy``), comma-separated: ``*`` (nothing is proxied), an IP address or
  a CIDR (matched against an IP host), ``name`` (that host and its subdomains), ``.name`` or
  ``*.name`` (its subdomains only); any entry may end in ``:port``, then only that port matches.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = ["proxy_from_environment"]


def _first(environ: Mapping[str, str], *names: str) -> str:
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return value
    return ""


def proxy_from_environment(server: str, environ: Mapping[str, str] | None = None) -> str | None:
    environ = os.environ if environ is None else environ
    url = urlsplit(server)
    host = (url.hostname or "").lower()
    port = url.port or (443 if url.scheme == "https" else 80)
    if url.scheme == "https":
        proxy = _first(environ, "HTTPS_PROXY", "https_proxy")
    else:
        proxy = _first(environ, "HTTP_PROXY", "http_proxy")
    if not proxy or not host or _never_proxied(host):
        return None
    if _bypassed(host, port, _first(environ, "NO_PROXY", "no_proxy")):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _never_proxied(host: str) -> bool:
    ip = _ip(host)
    return host == "localhost" or (ip is not None and ip.is_loopback)


def _bypassed(host: str, port: int, no_proxy: str) -> bool:
    ip = _ip(host)
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        if ip is not None:
            try:
                if ip in ipaddress.ip_network(entry, strict=False):
                    return True
                continue
            except ValueError:
                pass
        entry_host, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        entry_ip = _ip(entry_host.strip("[]"))
        if entry_ip is not None:
            if ip is not None and ip == entry_ip:
                return True
            continue
        if entry_host.startswith("*."):
            entry_host = entry_host[1:]
        if entry_host.startswith("."):
            if host.endswith(entry_host):
                return True
        elif host == entry_host or host.endswith("." + entry_host):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    """``host:port`` (``[v6]:port`` too) as its parts; anything else as a host without a port."""
    head, colon, tail = entry.rpartition(":")
    if not colon or not tail.isdigit() or (":" in head and not head.endswith("]")):
        return entry, None
    return head, int(tail)
