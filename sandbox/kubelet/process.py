"""One container instance as a local process group.

The process runs in its own session, like a container's processes in their own namespace. As a
container runtime does, stopping sends SIGTERM to the main process only (a shell that traps it
then exits with the status of the interrupted ``wait``, 143) and, after the grace period, SIGKILL
to the whole group. When the main process ends, anything it left behind in the group is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

logger = logging.getLogger(__name__)

IDLE_COMMAND = ("sh", "-c", "trap 'exit 0' TERM INT; sleep 2147483647 & wait")
"""Run for a container with neither command nor args: it idles until stopped, like a server."""


class StartFailed(RuntimeError):
    """The executable could not be started (missing, not executable)."""


class ContainerProcess:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self._done = asyncio.Event()
        self._returncode: int | None = None

    @property
    def pid(self) -> int:
        return self._process.pid

    @classmethod
    async def start(
        cls, argv: Sequence[str], env: Mapping[str, str], cwd: Path, log_path: Path
    ) -> ContainerProcess:
        command = list(argv) or list(IDLE_COMMAND)
        with log_path.open("ab") as log:
            try:
                process = await asyncio.create_subprocess_exec(
                    *command,
                    env=dict(env),
                    cwd=str(cwd),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=log,
                    stderr=asyncio.subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as error:
                message = f'exec: "{command[0]}": {error.strerror or error}'
                raise StartFailed(message) from error
        return cls(process)

    async def wait(self) -> int:
        """The return code (negative: killed by that signal), once the main process has ended."""
        if self._returncode is None:
            self._returncode = await self._process.wait()
            self._signal_group(signal.SIGKILL)
            self._done.set()
        return self._returncode

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signum)

    async def stop(self, grace_seconds: float) -> int:
        """SIGTERM the main process, wait up to the grace period, then SIGKILL the group."""
        if self._returncode is None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(max(grace_seconds, 0.0)):
                    return await self.wait()
            except TimeoutError:
                logger.info("process group %d outlived its grace period; killing it", self._process.pid)
                self._signal_group(signal.SIGKILL)
        return await self.wait()
