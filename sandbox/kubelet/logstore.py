"""Where container output goes: one file per container instance, current and previous.

Files live at ``<root>/<namespace>_<pod>_<uid>/<container>/<restart>.log``, like the kubelet's
``/var/log/pods`` layout; stdout and stderr share one file, so their order is kept.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class _Instances:
    paths: list[Path] = field(default_factory=list)
    live: bool = False
    waiting_reason: str = ""


@dataclass(frozen=True)
class LogSource:
    path: Path
    live: bool


class LogNotFound(LookupError):
    """No log for the request; the message is what `kubectl logs` prints."""


class LogStore:
    def __init__(self, root: Path) -> None:
        self._root = root
        self._pods: dict[tuple[str, str], str] = {}
        self._containers: dict[tuple[str, str], _Instances] = {}

    def pod_dir(self, namespace: str, pod: str, uid: str) -> Path:
        return self._root / f"{namespace}_{pod}_{uid}"

    def register_pod(self, namespace: str, pod: str, uid: str, containers: list[str]) -> None:
        self._pods[(namespace, pod)] = uid
        for name in containers:
            self._containers.setdefault((uid, name), _Instances(waiting_reason="ContainerCreating"))

    def new_instance(self, uid: str, namespace: str, pod: str, container: str, restart: int) -> Path:
        directory = self.pod_dir(namespace, pod, uid) / container
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{restart}.log"
        path.write_bytes(b"")
        instances = self._containers.setdefault((uid, container), _Instances())
        instances.paths.append(path)
        instances.live = True
        instances.waiting_reason = ""
        return path

    def instance_ended(self, uid: str, container: str) -> None:
        instances = self._containers.get((uid, container))
        if instances is not None:
            instances.live = False

    def set_waiting(self, uid: str, container: str, reason: str) -> None:
        instances = self._containers.get((uid, container))
        if instances is not None:
            instances.waiting_reason = reason

    def locate(self, namespace: str, pod: str, container: str, *, previous: bool = False) -> LogSource:
        uid = self._pods.get((namespace, pod))
        if uid is None:
            raise LogNotFound(f'pod "{pod}" in namespace "{namespace}" is not running on this node')
        instances = self._containers.get((uid, container))
        if instances is None:
            raise LogNotFound(f'container "{container}" in pod "{pod}" is not valid')
        if previous:
            if len(instances.paths) < 2:
                raise LogNotFound(f'previous terminated container "{container}" in pod "{pod}" not found')
            return LogSource(instances.paths[-2], live=False)
        if not instances.paths:
            reason = instances.waiting_reason or "ContainerCreating"
            raise LogNotFound(f'container "{container}" in pod "{pod}" is waiting to start: {reason}')
        return LogSource(instances.paths[-1], live=instances.live)

    def is_live(self, namespace: str, pod: str, container: str, path: Path) -> bool:
        uid = self._pods.get((namespace, pod))
        instances = self._containers.get((uid or "", container))
        return (
            instances is not None and instances.live and bool(instances.paths) and instances.paths[-1] == path
        )

    def forget(self, namespace: str, pod: str, uid: str) -> None:
        if self._pods.get((namespace, pod)) == uid:
            del self._pods[(namespace, pod)]
        for key in [k for k in self._containers if k[0] == uid]:
            del self._containers[key]
        shutil.rmtree(self.pod_dir(namespace, pod, uid), ignore_errors=True)


def tail(data: bytes, lines: int | None) -> bytes:
    """The last ``lines`` lines of ``data`` (all of it when None)."""
    if lines is None:
        return data
    if lines <= 0:
        return b""
    parts = data.splitlines(keepends=True)
    return b"".join(parts[-lines:])
