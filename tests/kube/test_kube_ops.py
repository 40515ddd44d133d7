"""The ops server answers /healthz, /readyz and /metrics from its registered checks and registry."""

from __future__ import annotations

import aiohttp
from prometheus_client import CollectorRegistry, Counter

from kube.ops import OpsServer


async def test_health_readiness_and_metrics() -> None:
    registry = CollectorRegistry()
    Counter("tfgang_things_total", "Things.", registry=registry).inc(3)
    state = {"synced": False}

    async def cert_loaded() -> bool:
        return True

    def exploding() -> bool:
        raise RuntimeError("probe bug")

    server = OpsServer(registry, host="127.0.0.1", port=0)
    server.add_readiness_check("cache-synced", lambda: state["synced"])
    server.add_readiness_check("certificate", cert_loaded)
    async with server, aiohttp.ClientSession() as session:
        async with session.get(f"{server.url}/healthz") as resp:
            assert resp.status == 200 and await resp.text() == "ok"
        async with session.get(f"{server.url}/readyz") as resp:
            assert resp.status == 503
            text = await resp.text()
            assert "[-]cache-synced failed" in text and "[+]certificate ok" in text
        state["synced"] = True
        async with session.get(f"{server.url}/readyz") as resp:
            assert resp.status == 200 and await resp.text() == "ok"
        async with session.get(f"{server.url}/readyz?verbose") as resp:
            assert resp.status == 200 and "[+]cache-synced ok" in await resp.text()
        server.add_liveness_check("loop", exploding)
        async with session.get(f"{server.url}/healthz") as resp:
            assert resp.status == 503 and "[-]loop failed" in await resp.text()
        async with session.get(f"{server.url}/metrics") as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/plain")
            assert "tfgang_things_total 3.0" in await resp.text()
