"""py-spy profiles for the benchmarks: sample a process while a load runs, then summarise where its
time went (the functions most samples were in, and on top of) as Markdown tables."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tools import tool

# "function (/long/path/package/module.py:123)" -> "function (package/module.py)"
_LOCATION = re.compile(r" \((?:[^()]*/)?([^/()]+/[^/()]+?)(?::\d+)?\)$")


@contextlib.contextmanager
def py_spy(pid: int, out: Path, seconds: float | None = None) -> Iterator[None]:
    """py-spy records ``pid`` (collapsed stacks to ``out``) during the block, or for ``seconds``."""
    command = [tool("py-spy"), "record", "--pid", str(pid), "--rate", "250", "--format", "raw",
               "--nonblocking", "--output", str(out)]  # fmt: skip
    if seconds is not None:
        command += ["--duration", f"{seconds:g}"]
    recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        if seconds is None:
            recorder.send_signal(signal.SIGINT)  # py-spy writes what it sampled, then exits
        recorder.wait((seconds or 0) + 60)


def profile_summary(collapsed: str, top: int = 20) -> str:
    """The functions that most samples were in (inclusive) and on top of (self), from py-spy's raw
    (collapsed stacks) output: one ``frame;frame;... count`` line per distinct stack."""
    inclusive: dict[str, int] = {}
    own: dict[str, int] = {}
    total = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = [_LOCATION.sub(r" (\1)", frame) for frame in stack.split(";")]
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + count
        own[frames[-1]] = own.get(frames[-1], 0) + count
    if not total:
        return "no samples"

    def table(counts: dict[str, int]) -> str:
        ranked = sorted(counts.items(), key=lambda item: -item[1])[:top]
        return "\n".join(f"| {count / total:.1%} | `{frame}` |" for frame, count in ranked)

    head = "| share | function |\n|---|---|\n"
    return (
        f"{total} samples.\n\nInclusive (the function or what it called):\n\n{head}{table(inclusive)}\n\n"
        f"Self (on top of the stack):\n\n{head}{table(own)}\n"
    )
