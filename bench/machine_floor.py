"""The machine's own latency floor: a bare TCP echo between the two cores, paced like ``hey``.

A latency goal is only reachable if a round trip that does no work at all reaches it. On a virtual
machine whose cores sleep between requests, waking the other core costs far more than the work,
and that cost is in every server's tail. This measures it: an echo server pinned to the servers'
core, one connection from the calling process paced at the gap each ``hey`` connection leaves
between its requests, one byte each way, no TLS and no HTTP.

Run alone: ``python bench/machine_floor.py [--gap-ms 10] [--count 500]``.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time

__all__ = ["paced_echo_round_trips"]


def _serve(listener: socket.socket) -> None:
    connection, _ = listener.accept()
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while data := connection.recv(64):
        connection.sendall(data)


def paced_echo_round_trips(server_core: int, client_core: int, gap_s: float, count: int) -> list[float]:
    """Seconds per round trip of ``count`` one-byte echoes sent ``gap_s`` apart."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve-fd", str(listener.fileno()), "--core", str(server_core)],
            pass_fds=(listener.fileno(),),
        )
    try:
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {client_core})
        try:
            with socket.create_connection(("127.0.0.1", port)) as client:
                client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                trips = []
                for _ in range(count):
                    time.sleep(gap_s)
                    started = time.perf_counter()
                    client.sendall(b"x")
                    client.recv(64)
                    trips.append(time.perf_counter() - started)
        finally:
            os.sched_setaffinity(0, before)
    finally:
        server.wait(10)
    return trips


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gap-ms", type=float, default=10.0)
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--serve-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--core", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fd is not None:
        os.sched_setaffinity(0, {args.core})
        _serve(socket.socket(fileno=args.serve_fd))
        return 0
    cores = sorted(os.sched_getaffinity(0))
    trips = sorted(paced_echo_round_trips(cores[0], cores[-1], args.gap_ms / 1000, args.count))
    print(
        f"TCP echo every {args.gap_ms:g} ms: p50 {trips[len(trips) // 2] * 1e3:.2f} ms, "
        f"p99 {trips[int(0.99 * len(trips))] * 1e3:.2f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
