"""One container instance as a local process group.

The process runs in its own session, like a container's processes in their own namespace. As a
container runtime does, stopping sends SIGTERM to the main process only (a shell that traps it
then exits with the status of the interrupted ``wait``, 143) and, after the grace period, SIGKILL
to the whole group. When the main process ends, anything it left behind in the group is killed.

Two rules of a real container are kept although the process is a host process:

- The main process is the container's PID 1, and the kernel drops a signal sent to a namespace's
  init unless it handles it: a ``sleep`` or a shell without a ``trap`` ignores SIGTERM and is
  killed (137) when the grace period ends. So SIGTERM is only sent when the main process catches it.
- A memory limit is enforced as the memory cgroup's OOM killer would: once the anonymous memory
  of the main process and its descendants exceeds it, the whole group is killed and the exit
  reads ``OOMKilled`` (137). The measurement is polled, so a program may overshoot for a moment
  that a cgroup would not allow.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

logger = logging.getLogger(__name__)

MEMORY_POLL_SECONDS = 0.1

IDLE_COMMAND = ("sh", "-c", "trap 'exit 0' TERM INT; sleep 2147483647 & wait")
"""Run for a container with neither command nor args: it idles until stopped, like a server."""


class StartFailed(RuntimeError):
    """The executable could not be started (missing, not executable)."""


class ContainerProcess:
    def __init__(self, process: asyncio.subprocess.Process, memory_limit: int | None = None) -> None:
        self._process = process
        self._done = asyncio.Event()
        self._returncode: int | None = None
        self.oom_killed = False
        """The group was killed for exceeding its memory limit."""
        self._memory_guard = (
            asyncio.create_task(self._guard_memory(memory_limit)) if memory_limit is not None else None
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        log_path: Path,
        memory_limit: int | None = None,
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
                raise StartFailed(start_error_message(command[0], error)) from error
        return cls(process, memory_limit)

    async def wait(self) -> int:
        """The return code (negative: killed by that signal), once the main process has ended."""
        if self._returncode is None:
            self._returncode = await self._process.wait()
            self._signal_group(signal.SIGKILL)
            if self._memory_guard is not None:
                self._memory_guard.cancel()
            self._done.set()
        return self._returncode

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signum)

    async def stop(self, grace_seconds: float) -> int:
        """SIGTERM the main process, wait up to the grace period, then SIGKILL the group."""
        if self._returncode is None and self._process.returncode is None:
            if catches(self._process.pid, signal.SIGTERM):
                with contextlib.suppress(ProcessLookupError):
                    self._process.send_signal(signal.SIGTERM)
            else:
                logger.info("process %d, the container's PID 1, has no SIGTERM handler", self._process.pid)
            try:
                async with asyncio.timeout(max(grace_seconds, 0.0)):
                    return await self.wait()
            except TimeoutError:
                logger.info("process group %d outlived its grace period; killing it", self._process.pid)
                self._signal_group(signal.SIGKILL)
        return await self.wait()

    async def _guard_memory(self, limit: int) -> None:
        while self._process.returncode is None:
            if group_memory(self._process.pid) > limit:
                logger.info("process %d and its children exceeded %d bytes", self._process.pid, limit)
                self.oom_killed = True
                self._signal_group(signal.SIGKILL)
                return
            await asyncio.sleep(MEMORY_POLL_SECONDS)


def start_error_message(command: str, error: OSError) -> str:
    """What containerd reports when runc cannot exec a container's command (``StartError``)."""
    if error.errno == errno.ENOENT and "/" not in command:
        cause = f'exec: "{command}": executable file not found in $PATH'
    elif error.errno == errno.ENOENT:
        cause = f'exec: "{command}": stat {command}: no such file or directory'
    else:
        cause = f'exec: "{command}": {(error.strerror or str(error)).lower()}'
    return (
        "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc "
        f"create failed: unable to start container process: error during container init: {cause}"
    )


def _status_fields(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (or is gone: nothing to protect)."""
    caught = _status_fields(pid).get("SigCgt")
    return caught is None or bool(int(caught, 16) >> (signum - 1) & 1)


def group_memory(pid: int) -> int:
    """Bytes of anonymous memory held by process ``pid`` and its descendants (a container's
    charge, less the shared file pages that a memory cgroup may have charged elsewhere)."""
    total = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        fields = _status_fields(current)
        for key in ("RssAnon", "RssShmem"):
            total += int(fields.get(key, "0 kB").split()[0]) * 1024
        for children in Path(f"/proc/{current}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                pending.extend(int(child) for child in children.read_text().split())
    return total
