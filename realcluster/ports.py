"""Loopback ports for the processes the sandbox and the tests start.

A port found free by binding to port 0 comes from the kernel's ephemeral range, the same range
every outgoing connection takes its local port from: between the check and the child's own bind,
a client connection of this machine could take it, and the child then failed with "address
already in use" (seen once in CI, the webhook of a chaos test's cluster). Ports are therefore
picked below the ephemeral range, where no connection is given a port; what is free there is
still checked by binding.

Public API:

- ``free_port() -> int`` -- a loopback TCP port free now, outside the ephemeral range when the
  kernel leaves room below it.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["free_port"]

_LOWEST = 10_000
_TRIES = 200


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    high = _ephemeral_low() - 1
    if high > _LOWEST:
        for _ in range(_TRIES):
            port = random.randint(_LOWEST, high)
            if _bindable(port):
                return port
    with socket.socket() as sock:  # no room below the ephemeral range: any free port
        sock.bind(("127.0.0.1", 0))
        found: int = sock.getsockname()[1]
        return found
