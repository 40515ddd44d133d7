"""Every running node is recorded in a state file, so a later run can clean up after one that was
killed (SIGKILL, a lost terminal) before it could tear down; and the kernel tunables the kubelet
changes are put back once the last node on the machine stops.

State lives in ``$TFGANG_KUBE_CACHE`` (default ``~/.cache/tfgang``), under ``nodes/``: one
``tfgang-node-<hex>.json`` per node (its owner's pid and start time, its folders) and
``kernel-tunables.json``, the values before the first of the nodes started. Several nodes may run
at once (each in a namespace and cgroup of its own); the tunables are the machine's, hence the one
baseline, written by the first node and restored by the last.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from realcluster.node.sweep import sweep

logger = logging.getLogger(__name__)

__all__ = ["NodeRecord", "clean_stale_nodes", "forget", "record", "restore_tunables", "save_tunables"]

# What the kubelet sets at start (vm.overcommit_memory 1, kernel.panic 10, kernel.panic_on_oops 1).
TUNABLES = ("vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops")
BASELINE = "kernel-tunables.json"


def state_dir() -> Path:
    root = os.environ.get("TFGANG_KUBE_CACHE") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "tfgang"
    )
    folder = Path(root) / "nodes"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def _locked() -> Iterator[Path]:
    folder = state_dir()
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield folder


def _start_time(pid: int) -> str:
    """The process's start time (field 22 of /proc/PID/stat): a pid reused later differs here."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


@dataclass(frozen=True)
class NodeRecord:
    id: str
    pid: int
    started: str
    workdir: str
    rundir: str
    temporary: bool

    def alive(self) -> bool:
        return bool(self.started) and _start_time(self.pid) == self.started


def _records(folder: Path) -> list[tuple[Path, NodeRecord]]:
    found = []
    for path in sorted(folder.glob("tfgang-node-*.json")):
        with contextlib.suppress(OSError, ValueError, TypeError):
            found.append((path, NodeRecord(**json.loads(path.read_text()))))
    return found


def record(node_id: str, workdir: Path, rundir: Path, temporary: bool) -> None:
    pid = os.getpid()
    entry = NodeRecord(node_id, pid, _start_time(pid), str(workdir), str(rundir), temporary)
    with _locked() as folder:
        (folder / f"{node_id}.json").write_text(json.dumps(asdict(entry)))


def forget(node_id: str) -> None:
    with _locked() as folder:
        (folder / f"{node_id}.json").unlink(missing_ok=True)


def _sysctl(name: str) -> Path:
    return Path("/proc/sys") / name


def save_tunables() -> None:
    """Remember the tunables before the first live node's kubelet changes them."""
    with _locked() as folder:
        baseline = folder / BASELINE
        if not baseline.exists():
            values = {name: _sysctl(name).read_text().strip() for name in TUNABLES}
            baseline.write_text(json.dumps(values))


def restore_tunables(node_id: str) -> None:
    """Put the tunables back when no node but ``node_id`` is alive."""
    with _locked() as folder:
        others = [entry for _, entry in _records(folder) if entry.id != node_id and entry.alive()]
        baseline = folder / BASELINE
        if others or not baseline.exists():
            return
        for name, value in json.loads(baseline.read_text()).items():
            try:
                _sysctl(name).write_text(value)
            except OSError as error:
                logger.warning("could not restore %s to %s: %s", name, value, error)
        baseline.unlink()


def clean_stale_nodes() -> list[str]:
    """Sweep every node whose owner is gone, and restore the tunables if no node is left alive;
    the ids of those swept."""
    with _locked() as folder:
        stale = [(path, entry) for path, entry in _records(folder) if not entry.alive()]
    for path, entry in stale:
        logger.info("cleaning up node %s left by a run that ended without teardown", entry.id)
        sweep(entry.id, f"/{entry.id}", [Path(entry.workdir), Path(entry.rundir)])
        shutil.rmtree(entry.rundir, ignore_errors=True)
        if entry.temporary:
            shutil.rmtree(entry.workdir, ignore_errors=True)
        path.unlink(missing_ok=True)
    restore_tunables("")
    return [entry.id for _, entry in stale]
