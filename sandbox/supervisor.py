"""Child processes of the local cluster: start, notice an unexpected exit, stop cleanly.

Each child writes its output to its own log file and runs in its own session, so stopping it
(its stop signal, a grace period, then SIGKILL to the whole process group) never touches anything
else. A child that exits while the cluster is meant to be running is a failure: the supervisor
records which one, with the tail of its log, and sets ``failed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)

LOG_TAIL_LINES = 20


@dataclass(frozen=True)
class ChildSpec:
    name: str
    argv: tuple[str, ...]
    log_path: Path
    env: Mapping[str, str] = field(default_factory=dict)
    stop_signal: int = signal.SIGTERM
    """SIGINT for the sandbox's own components (they stop on KeyboardInterrupt), SIGTERM otherwise."""
    grace_seconds: float = 10.0


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class ChildProcess:
    def __init__(self, spec: ChildSpec, process: asyncio.subprocess.Process) -> None:
        self.spec = spec
        self._process = process

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    @classmethod
    async def start(cls, spec: ChildSpec) -> ChildProcess:
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        with spec.log_path.open("ab") as log:
            process = await asyncio.create_subprocess_exec(
                *spec.argv,
                env=dict(spec.env),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        logger.info("started %s (pid %d), log %s", spec.name, process.pid, spec.log_path)
        return cls(spec, process)

    async def wait(self) -> int:
        return await self._process.wait()

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signum)

    async def stop(self) -> int:
        """The stop signal, then SIGKILL for the group after the grace period; the return code."""
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(self.spec.stop_signal)
            try:
                async with asyncio.timeout(self.spec.grace_seconds):
                    await self._process.wait()
            except TimeoutError:
                logger.warning(
                    "%s outlived its %ss grace period; killing it", self.spec.name, self.spec.grace_seconds
                )
        # Whatever the child left behind in its session goes too.
        self._signal_group(signal.SIGKILL)
        return await self._process.wait()


class Supervisor:
    """Starts children, reports the first unexpected exit, stops them in reverse order."""

    def __init__(self) -> None:
        self._children: list[ChildProcess] = []
        self._watchers: list[asyncio.Task[None]] = []
        self._stopping = False
        self._killed: set[ChildProcess] = set()
        """Children killed on purpose (chaos tests): their exit is not a failure."""
        self.failed = asyncio.Event()
        self.failure = ""

    @property
    def children(self) -> Sequence[ChildProcess]:
        return tuple(self._children)

    async def start(self, spec: ChildSpec) -> ChildProcess:
        child = await ChildProcess.start(spec)
        self._children.append(child)
        self._watchers.append(asyncio.create_task(self._watch(child), name=f"watch-{spec.name}"))
        return child

    def child(self, name: str) -> ChildProcess:
        """The running child called ``name`` (the latest one started under that name)."""
        for child in reversed(self._children):
            if child.spec.name == name:
                return child
        raise KeyError(f"no child called {name!r}")

    async def kill(self, name: str, signum: int = signal.SIGKILL) -> int:
        """Kill a child on purpose, as ``kill -9`` would (its exit is not a failure); its code."""
        child = self.child(name)
        self._killed.add(child)
        child._signal_group(signum)
        return await child.wait()

    async def restart(self, name: str) -> ChildProcess:
        """Start a killed child again with the same spec, as a Deployment would."""
        old = self.child(name)
        if old.returncode is None:
            raise RuntimeError(f"{name} is still running")
        self._children.remove(old)
        return await self.start(old.spec)

    async def _watch(self, child: ChildProcess) -> None:
        code = await child.wait()
        if self._stopping or child in self._killed:
            return
        message = f"{child.spec.name} exited unexpectedly with code {code}"
        tail = log_tail(child.spec.log_path)
        logger.error("%s; last lines of %s:\n%s", message, child.spec.log_path, tail)
        if not self.failed.is_set():
            self.failure = f"{message} (log {child.spec.log_path})"
            self.failed.set()

    def check(self) -> None:
        """Raise if a child has died."""
        if self.failed.is_set():
            raise ChildFailed(self.failure)

    async def stop_all(self) -> None:
        self._stopping = True
        for child in reversed(self._children):
            code = await child.stop()
            logger.info("stopped %s (code %d)", child.spec.name, code)
        for watcher in self._watchers:
            watcher.cancel()
        await asyncio.gather(*self._watchers, return_exceptions=True)
        self._children.clear()
        self._watchers.clear()


class ChildFailed(RuntimeError):
    """A component of the local cluster exited while the cluster was meant to run."""
