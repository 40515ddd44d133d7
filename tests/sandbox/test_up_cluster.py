"""``tfgang-sandbox up --operator`` as a user runs it: every port it prints is named and answers, and
the components' logs stay in the folder it named first, after Ctrl-C too."""

from __future__ import annotations

import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
READY_LINE = "Ctrl-C stops everything"
STARTUP_SECONDS = 180.0  # two busy cores start five processes


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.put(line.rstrip("\n"))


def _read_until(lines: queue.Queue[str], last: str, timeout: float) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while not seen or seen[-1] != last:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no {last!r} within {timeout}s; printed so far: {seen}"
        try:
            seen.append(lines.get(timeout=remaining))
        except queue.Empty:
            continue
    return seen


def _ready(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10) as response:
        return int(response.status)


def test_up_names_its_ports_and_keeps_the_logs_after_ctrl_c(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    process = subprocess.Popen(
        [sys.executable, "-m", "sandbox", "up", "--operator", "--kubeconfig", str(kubeconfig),
         "--nodes", "las1:cpu=4,memory=8Gi"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(process.stdout, lines), daemon=True).start()
    log_dir: Path | None = None
    try:
        printed = _read_until(lines, READY_LINE, STARTUP_SECONDS)
        first = re.fullmatch(r"component logs in (\S+) \(kept after exit\)", printed[0])
        assert first, printed
        log_dir = Path(first.group(1))
        assert re.search(
            rf"^sandbox API server at https://127\.0\.0\.1:\d+; kubeconfig written to {kubeconfig}$",
            "\n".join(printed),
            re.MULTILINE,
        ), printed
        ports = next(
            match
            for line in printed
            if (
                match := re.fullmatch(
                    r"tfgang webhook at https://127\.0\.0\.1:(\d+); webhook ops :(\d+), "
                    r"controller ops :(\d+) \(/healthz, /readyz, /metrics\)",
                    line,
                )
            )
        )
        webhook_ops, controller_ops = int(ports.group(2)), int(ports.group(3))
        assert _ready(webhook_ops) == 200 and _ready(controller_ops) == 200
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    try:
        assert process.returncode == 0
        tail = _read_until(lines, f"component logs kept in {log_dir}", 10)
        assert "stopping the sandbox" in tail
        assert log_dir is not None and log_dir.is_dir()
        for component in ("scheduler", "kubelet", "webhook", "controller"):
            log = log_dir / f"{component}.log"
            assert log.is_file() and log.stat().st_size > 0, component
    finally:
        if log_dir is not None and log_dir.parent.name.startswith("tfgang-sandbox-"):
            shutil.rmtree(log_dir.parent, ignore_errors=True)
