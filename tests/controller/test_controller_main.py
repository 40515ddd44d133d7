"""The process entry point fails clearly on an unusable kubeconfig instead of crashing."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import yaml

from controller.__main__ import serve
from controller.config import parse_config


async def test_missing_kubeconfig_exits_with_usage_code(tmp_path: Path) -> None:
    config = parse_config(["--kubeconfig", str(tmp_path / "absent"), "--ops-port", "0"], environ={})
    assert await serve(config, asyncio.Event()) == 2


async def test_unparsable_kubeconfig_exits_with_usage_code(tmp_path: Path) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("this: is: not: a kubeconfig")
    config = parse_config(["--kubeconfig", str(broken), "--ops-port", "0"], environ={})
    assert await serve(config, asyncio.Event()) == 2


async def test_an_ops_port_in_use_is_a_clear_error(apiserver: object, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = parse_config(
            ["--kubeconfig", str(apiserver.kubeconfig), "--ops-host", "127.0.0.1", "--ops-port", str(port)],  # type: ignore[attr-defined]
            environ={},
        )
        assert await serve(config, asyncio.Event()) == 1


async def test_a_controller_that_cannot_reach_its_api_server_stops_at_once(tmp_path: Path) -> None:
    """Never synced (nothing listens at the address), SIGTERM-like stop returns without a drain wait."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "k", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
            }
        )
    )
    config = parse_config(
        ["--kubeconfig", str(kubeconfig), "--ops-host", "127.0.0.1", "--ops-port", "0"], environ={}
    )
    stop = asyncio.Event()
    serving = asyncio.create_task(serve(config, stop))
    await asyncio.sleep(0.3)
    assert not serving.done(), "it keeps retrying while the API server is away"
    stop.set()
    async with asyncio.timeout(5):  # well under the 10 s drain a leading controller may take
        assert await serving == 0
