"""The process entry point fails clearly on an unusable kubeconfig instead of crashing."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

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
