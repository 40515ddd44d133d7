"""Ports for child processes come from below the ephemeral range, where no connection takes one."""

from __future__ import annotations

import socket
from pathlib import Path

from realcluster.ports import free_port


def test_a_free_port_is_bindable_and_below_the_ephemeral_range() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(20):
        port = free_port()
        assert port < low or low <= 10_001
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # free, as promised
