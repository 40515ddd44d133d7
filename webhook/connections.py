"""The bounds on what a caller can hold of the webhook: connection limits, the body budget, and the
``metav1.Status`` body every refusal carries.

``ConnectionLimits`` are the flags' values: the idle limit (kept above kube-apiserver's own 90 s,
so that the client, not the server, closes idle connections), the header, body and TLS handshake
deadlines, the connection cap and the header sizes. ``http11`` enforces the deadlines and sizes as
state of each connection, ``server`` the cap and the handshake deadline (its accept loop).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Final

import orjson

# kube-apiserver's webhook client closes its idle connections after 90 s; closing them later
# than that means the server never closes one the client is about to reuse.
DEFAULT_IDLE_TIMEOUT: Final = 120.0
DEFAULT_HEADER_TIMEOUT: Final = 10.0
DEFAULT_BODY_TIMEOUT: Final = 10.0
DEFAULT_HANDSHAKE_TIMEOUT: Final = 10.0
# Each TLS connection holds a 256 KiB read buffer in asyncio's and uvloop's SSL protocol: 200 of
# them are 50 MiB, within the chart's memory limit next to the process's ~100 MiB.
DEFAULT_MAX_CONNECTIONS: Final = 200
DEFAULT_MAX_HEADER_BYTES: Final = 8190
DEFAULT_MAX_HEADERS: Final = 64
# Bodies being read at once: four of the largest (4 MiB), or thousands of ordinary reviews.
DEFAULT_MAX_INFLIGHT_BODY_BYTES: Final = 16 * 1024 * 1024


@dataclass(frozen=True)
class ConnectionLimits:
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    # One header line (request line or field) at most this long; at most max_headers fields.
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    max_headers: int = DEFAULT_MAX_HEADERS
    max_inflight_body_bytes: int = DEFAULT_MAX_INFLIGHT_BODY_BYTES


def status_body(code: int, reason: str, message: str) -> bytes:
    """A ``metav1.Status`` failure, the shape kube-apiserver prints for a webhook's HTTP error."""
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    )


class BodyBudget:
    """Bytes of request bodies being read at once, across all connections.

    A body is read whole and then decoded (several times its size in Python objects), so the
    number of large bodies in flight, not their count per connection, is what memory depends on.
    A request takes its declared length (at most the whole budget) and waits, within its body
    deadline, while others hold the budget; ordinary reviews (a few KiB) never touch it."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._free = total
        self._waiting: list[tuple[int, asyncio.Future[None]]] = []

    async def take(self, size: int) -> int:
        """Wait until ``size`` bytes (at most the whole budget) are free and hold them; returns
        what is held, for ``give_back``."""
        size = min(size, self.total)
        if self._free >= size:
            self._free -= size
            return size
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (size, waiter)
        self._waiting.append(entry)
        try:
            await waiter
        except asyncio.CancelledError:
            if entry in self._waiting:
                self._waiting.remove(entry)
            elif waiter.done() and not waiter.cancelled():
                self.give_back(size)  # granted in the same turn as the cancellation
            raise
        return size

    def give_back(self, size: int) -> None:
        self._free += size
        for entry in list(self._waiting):
            wanted, waiter = entry
            if wanted <= self._free:
                self._free -= wanted
                self._waiting.remove(entry)
                waiter.set_result(None)
