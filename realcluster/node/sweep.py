"""Removes what a node leaves on the machine: its processes, its mounts, its cgroups, its network
namespace. Used at every teardown after the daemons were asked to stop, and for a run that was
killed before it could tear down (``realcluster.node.state``).

Only what is provably the node's is touched: processes inside its namespace or its cgroup, or
whose command line names its folders; mounts below its folders; cgroups below its own root.
The machine's ``/sys/fs/cgroup`` itself is never remounted or changed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

logger = logging.getLogger(__name__)

__all__ = ["cgroup_dirs", "kill_cgroup", "kill_everything", "mounts_below", "sweep", "unmount_below"]

CGROUP_MOUNT = Path("/sys/fs/cgroup")


def cgroup_dirs(cgroup: str) -> list[Path]:
    """``cgroup`` (``/name``) in every mounted v1 hierarchy (cpu, memory, ..., name=systemd)."""
    relative = cgroup.strip("/")
    hierarchies = [entry for entry in CGROUP_MOUNT.iterdir() if entry.is_dir() and not entry.is_symlink()]
    return [hierarchy / relative for hierarchy in sorted(hierarchies)]


def _tree_bottom_up(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    found = [Path(folder) for folder, _, _ in os.walk(root)]
    return sorted(found, key=lambda path: len(path.parts), reverse=True)


def _cgroup_pids(cgroup: str) -> set[int]:
    pids: set[int] = set()
    for root in cgroup_dirs(cgroup):
        for folder in _tree_bottom_up(root):
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(line) for line in (folder / "cgroup.procs").read_text().split())
    return pids


def kill_cgroup(cgroup: str, timeout: float = 10.0) -> None:
    """SIGKILL every process in ``cgroup``'s tree (the pods', once the kubelet is gone)."""
    deadline = time.monotonic() + timeout
    while (pids := _cgroup_pids(cgroup)) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def _netns_pids(netns: str) -> set[int]:
    done = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, check=False)
    return {int(word) for word in done.stdout.decode().split() if word.isdigit()}


def _pids_naming(paths: Iterable[Path]) -> set[int]:
    """Processes whose command line names one of ``paths`` (containerd's shims, the host's socat)."""
    needles = [str(path).encode() for path in paths]
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            cmdline = (entry / "cmdline").read_bytes()
            if any(needle in cmdline for needle in needles):
                found.add(int(entry.name))
    return found


def kill_everything(netns: str, cgroup: str, paths: Iterable[Path], timeout: float = 20.0) -> None:
    """SIGKILL every process of the node until none is left (a dying shim may start no more)."""
    folders = list(paths)
    deadline = time.monotonic() + timeout
    while True:
        pids = _netns_pids(netns) | _cgroup_pids(cgroup) | _pids_naming(folders)
        pids.discard(os.getpid())
        if not pids:
            return
        if time.monotonic() > deadline:
            logger.warning("processes of %s still alive after SIGKILL: %s", netns, sorted(pids))
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal."""
    return field.encode().decode("unicode_escape")


def mounts_below(folders: Iterable[Path]) -> list[str]:
    """Mount points at or below ``folders``, deepest first."""
    roots = [str(folder.resolve()) for folder in folders]
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = _unescape(line.split()[4])
        if any(point == root or point.startswith(root + "/") for root in roots):
            points.append(point)
    return sorted(points, key=lambda point: point.count("/"), reverse=True)


def unmount_below(folders: Iterable[Path]) -> None:
    """Lazily unmount everything below ``folders`` (the kubelet's bind mount of its root dir onto
    itself, pod volumes, containerd's overlay and shm mounts, pod network namespaces)."""
    folders = list(folders)
    for _ in range(5):
        points = mounts_below(folders)
        if not points:
            return
        for point in points:
            subprocess.run(["umount", "--lazy", point], capture_output=True, check=False)
    logger.warning("mounts left below %s: %s", folders, mounts_below(folders))


def remove_cgroups(cgroup: str) -> None:
    for root in cgroup_dirs(cgroup):
        for folder in _tree_bottom_up(root):
            with contextlib.suppress(FileNotFoundError):
                try:
                    folder.rmdir()
                except OSError as error:
                    logger.warning("cgroup %s not removed: %s", folder, error)


CONTAINER_LOG_LINKS = Path("/var/log/containers")
"""Where the kubelet links each container's log (not configurable); the links of a node point
into its folders."""


def remove_log_links(folders: Iterable[Path]) -> None:
    roots = [str(folder.resolve()) + "/" for folder in folders]
    if not CONTAINER_LOG_LINKS.is_dir():
        return
    for link in CONTAINER_LOG_LINKS.iterdir():
        with contextlib.suppress(OSError):
            if link.is_symlink() and any(os.readlink(link).startswith(root) for root in roots):
                link.unlink()


def delete_netns(netns: str) -> None:
    if Path(f"/run/netns/{netns}").exists():
        subprocess.run(["ip", "netns", "delete", netns], capture_output=True, check=False)


def sweep(netns: str, cgroup: str, folders: Iterable[Path]) -> None:
    """Everything the node left: processes, then mounts, cgroups and the namespace."""
    folders = [folder for folder in folders if folder.exists()]
    kill_everything(netns, cgroup, folders)
    unmount_below(folders)
    remove_log_links(folders)
    remove_cgroups(cgroup)
    delete_netns(netns)
