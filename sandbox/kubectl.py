"""The real kubectl, run as a subprocess: one-shot commands and ``get -w`` streams.

The demo shows kubectl's own output, so it runs kubectl rather than printing what an API client
sees; a watch stream's lines are printed as they come, each behind a label naming the stream.
Which kubectl to run is ``realcluster.kubectl.find_kubectl``'s choice.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from realcluster.kubectl import KubectlError

Emit = Callable[[str], None]


@dataclass(frozen=True)
class KubectlResult:
    code: int
    stdout: str
    stderr: str


async def kubectl(
    binary: str, kubeconfig: Path, args: Sequence[str], stdin: str | None = None, limit_seconds: float = 60.0
) -> KubectlResult:
    process = await asyncio.create_subprocess_exec(
        binary,
        "--kubeconfig",
        str(kubeconfig),
        *args,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(limit_seconds):
            out, err = await process.communicate(stdin.encode() if stdin is not None else None)
    except TimeoutError as error:
        process.kill()
        await process.wait()
        raise KubectlError(f"kubectl {' '.join(args)} did not finish within {limit_seconds}s") from error
    return KubectlResult(process.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace"))


@dataclass(frozen=True)
class StreamLine:
    text: str
    at: float
    """Monotonic time the line arrived."""


class WatchStream:
    """``kubectl get <resource> -owide -w``, its lines printed behind ``label`` and kept."""

    def __init__(self, binary: str, kubeconfig: Path, resource: str, label: str, emit: Emit) -> None:
        self.resource = resource
        self.label = label
        self._argv = (binary, "--kubeconfig", str(kubeconfig), "get", resource, "-owide", "-w")
        self._emit = emit
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self.header = ""
        self.lines: list[StreamLine] = []
        self.stderr = ""

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            *self._argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        self._reader = asyncio.create_task(self._read(), name=f"watch-{self.resource}")

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        while line := await self._process.stdout.readline():
            text = line.decode(errors="replace").rstrip("\n")
            if not text.strip():
                continue
            self._emit(f"{self.label} | {text}")
            if not self.header and text.split()[:1] == ["NAME"]:
                self.header = text
            else:
                self.lines.append(StreamLine(text, time.monotonic()))

    async def stop(self) -> None:
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
        try:
            async with asyncio.timeout(5):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if process.stderr is not None:
            self.stderr = (await process.stderr.read()).decode(errors="replace")


def environment_section(describe_output: str) -> list[str]:
    """The ``Environment:`` block of ``kubectl describe pod`` (the heading and its deeper lines)."""
    lines = describe_output.splitlines()
    for index, line in enumerate(lines):
        if line.strip() == "Environment:" or line.strip().startswith("Environment:"):
            indent = len(line) - len(line.lstrip())
            section = [line]
            for following in lines[index + 1 :]:
                if following.strip() and len(following) - len(following.lstrip()) <= indent:
                    break
                section.append(following)
            return section
    return []
