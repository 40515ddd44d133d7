"""Pod scenarios played on a node, and what a watcher of the pod sees of them.

A scenario is one plain pod bound to a node by ``nodeName`` (no scheduler involved), with a
busybox command that the sandbox's node agent can run as a host process too (``sh``, ``sleep``,
exit codes), and what the scenario does to it once it runs (delete it, evict it). ``play`` creates
it in a namespace of its own, watches it and returns every distinct ``PodSeen`` in order, from the
first status the node wrote to the last before the scenario's end: a terminal phase, enough
restarts, or the pod gone.

What a view keeps is what the comparison is about: the pod's phase and the conditions the node
writes, and the container's state, reason, exit code, message, last state and restart count. What
is random in it (the pod's uid and namespace, the node's name) is replaced by placeholders; times
and container ids are left out.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kube.api import KubeApi, WatchEvent
from kube.errors import ApiError, NotFound
from kube.resources import NAMESPACES, PODS, Resource

IMAGE = "busybox:1.37.0-glibc"
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "DisruptionTarget")
"""The pod conditions a view keeps (PodScheduled is the API server's, set by ``nodeName`` alone)."""
TF_CONFIG = (
    '{"cluster":{"worker":["dist-mnist-worker-0.kcmp.svc:2222","dist-mnist-worker-1.kcmp.svc:2222"]},'
    '"task":{"type":"worker","index":1},"environment":"cloud"}'
)
GROW = ("sh", "-c", "x=$(head -c 1048576 /dev/zero | tr '\\0' x); y=$x; while :; do y=$y$x; done")
"""Appends 1 MiB at a time to a shell variable until a memory limit stops it."""
SETTLE_SECONDS = 3.0
"""How long a terminal pod is watched further: a node writes nothing more once the phase is final."""


@dataclass(frozen=True)
class Scenario:
    name: str
    command: tuple[str, ...]
    restart_policy: str = "Never"
    memory_limit: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    stop: str = ""
    """What is done to the pod once its container runs: "" (nothing), "delete" or "evict"."""
    stop_in_backoff: bool = False
    """Do it once the container waits in the back-off instead (it was restarted at least once)."""
    grace_seconds: int = 30
    """The pod's ``terminationGracePeriodSeconds``; deletion and eviction use the pod's own."""
    restarts: int = 0
    """Watch until the container has been restarted this often and waits in the back-off again."""
    read_log: bool = False
    """Compare the container's log, read once the pod has ended."""
    longest: float = 90.0
    open_difference: str = ""
    """A difference found and not fixed yet: the scenario is a strict expected failure until it is."""

    def __str__(self) -> str:
        return self.name


SCENARIOS = (
    Scenario("exit 0 under Never", ("sh", "-c", "exit 0")),
    Scenario("exit 1 under Never", ("sh", "-c", "exit 1")),
    Scenario("exit 0 under OnFailure", ("sh", "-c", "exit 0"), restart_policy="OnFailure"),
    Scenario(
        "exit 1 under OnFailure: in-place restarts with the back-off",
        ("sh", "-c", "exit 1"),
        restart_policy="OnFailure",
        restarts=2,
    ),
    Scenario(
        "exit 1 under Always: in-place restarts with the back-off",
        ("sh", "-c", "exit 1"),
        restart_policy="Always",
        restarts=2,
    ),
    Scenario(
        "exit 0 under Always: restarted too, with the back-off",
        ("sh", "-c", "exit 0"),
        restart_policy="Always",
        restarts=2,
    ),
    Scenario(
        "a container that sends itself SIGKILL",
        ("sh", "-c", "kill -9 $$$$"),  # "$$" is the API's escape for "$"
        open_difference=(
            "the container's shell is PID 1 of its PID namespace, which the kernel shields from any "
            "signal sent from inside that it does not handle, SIGKILL included: it goes on and exits 0 "
            "(Completed). The sandbox's shell is an ordinary host process and dies (137, Error)."
        ),
    ),
    Scenario(
        "a memory limit exceeded",
        GROW,
        memory_limit="32Mi",
    ),
    Scenario(
        "deletion with a grace period: a container that ignores SIGTERM",
        ("sleep", "3600"),
        restart_policy="Always",
        stop="delete",
        grace_seconds=3,
    ),
    Scenario(
        "deletion with a grace period: a container that traps SIGTERM",
        ("sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"),
        restart_policy="Always",
        stop="delete",
        grace_seconds=10,
    ),
    Scenario(
        "eviction through the API",
        ("sh", "-c", "trap 'exit 143' TERM; while :; do sleep 1; done"),
        restart_policy="OnFailure",
        stop="evict",
        grace_seconds=10,
    ),
    Scenario(
        "deletion of a container waiting in the back-off",
        ("sh", "-c", "exit 3"),
        restart_policy="OnFailure",
        stop="delete",
        stop_in_backoff=True,
    ),
    Scenario(
        "a memory limit exceeded under OnFailure: restarted",
        GROW,
        restart_policy="OnFailure",
        memory_limit="32Mi",
        restarts=1,
    ),
    Scenario("a command not found", ("no-such-command",)),
    Scenario(
        "a command not found under Always",
        ("no-such-command",),
        restart_policy="Always",
        restarts=1,
    ),
    Scenario(
        "TF_CONFIG seen inside the container",
        ("sh", "-c", 'echo "$TF_CONFIG"'),
        env={"TF_CONFIG": TF_CONFIG},
        read_log=True,
    ),
)


@dataclass(frozen=True)
class ContainerSeen:
    state: str
    """``waiting``, ``running`` or ``terminated``."""
    reason: str
    exit_code: int | None
    signal: int | None
    message: str
    last_state: str
    last_reason: str
    last_exit_code: int | None
    restart_count: int
    ready: bool


@dataclass(frozen=True)
class PodSeen:
    phase: str
    reason: str
    deleting: bool
    conditions: tuple[tuple[str, str, str], ...]
    """(type, status, reason) of the node's conditions, in ``CONDITIONS`` order."""
    container: ContainerSeen | None


@dataclass(frozen=True)
class Played:
    views: tuple[PodSeen, ...]
    log: str = ""
    gone: bool = False
    """The pod was removed from the API (after a deletion or eviction)."""


@dataclass(frozen=True)
class Verdict:
    """What two nodes must agree on once a scenario has been played on each.

    Not the whole sequence of views: a kubelet learns of a container's start and end from its
    runtime a relist later, so a container that ends within a second may never be reported
    running, and two changes close together may be written as one. What is compared:
    """

    first: PodSeen
    """The first status the node wrote (the pod accepted, nothing started)."""
    course: tuple[ContainerSeen, ...]
    """Every distinct state of the container other than running or being created, in order:
    each termination, each back-off wait (its message says the delay), each restart count."""
    last: PodSeen
    """The last status before the scenario ended or the pod was removed."""
    gone: bool
    log: str


def verdict(played: Played) -> Verdict:
    if not played.views:
        raise AssertionError("the node wrote no status")
    course: list[ContainerSeen] = []
    for view in played.views:
        container = view.container
        if container is None or container.state == "running" or container.reason == "ContainerCreating":
            continue
        if not course or course[-1] != container:
            course.append(container)
    return Verdict(played.views[0], tuple(course), played.views[-1], played.gone, played.log)


@dataclass(frozen=True)
class Placeholders:
    """What differs between two plays of one scenario, to be replaced before comparing."""

    namespace: str
    pod: str
    uid: str = ""
    node: str = ""

    def apply(self, text: str) -> str:
        if self.uid:
            text = text.replace(self.uid, "<uid>")
        if self.node:
            text = text.replace(self.node, "<node>")
        return text.replace(self.namespace, "<namespace>")


def manifest(scenario: Scenario, name: str, namespace: str, node: str) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "image": IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": list(scenario.command),
    }
    if scenario.env:
        container["env"] = [{"name": k, "value": v} for k, v in scenario.env.items()]
    if scenario.memory_limit:
        limit = {"memory": scenario.memory_limit}
        container["resources"] = {"limits": dict(limit), "requests": dict(limit)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeName": node,
            "restartPolicy": scenario.restart_policy,
            "terminationGracePeriodSeconds": scenario.grace_seconds,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "containers": [container],
        },
    }


def _state(raw: Mapping[str, Any] | None) -> tuple[str, Mapping[str, Any]]:
    for kind in ("waiting", "running", "terminated"):
        if raw and raw.get(kind) is not None:
            return kind, raw[kind] or {}
    return "", {}


def _code(value: Any) -> int | None:
    return int(value) if isinstance(value, int) else None


_CONTAINER_ID = re.compile(r"\b[0-9a-f]{64}\b")


def seen(pod: Mapping[str, Any], marks: Placeholders) -> PodSeen:
    status = pod.get("status") or {}
    by_type = {str(c.get("type")): c for c in status.get("conditions") or ()}
    conditions = tuple(
        (kind, str(by_type[kind].get("status") or ""), str(by_type[kind].get("reason") or ""))
        for kind in CONDITIONS
        if kind in by_type
    )
    container = None
    for raw in status.get("containerStatuses") or ():
        state, current = _state(raw.get("state"))
        last, previous = _state(raw.get("lastState"))
        message = _CONTAINER_ID.sub("<id>", marks.apply(str(current.get("message") or "")))
        container = ContainerSeen(
            state=state,
            reason=str(current.get("reason") or ""),
            exit_code=_code(current.get("exitCode")),
            signal=_code(current.get("signal")),
            message=message,
            last_state=last,
            last_reason=str(previous.get("reason") or ""),
            last_exit_code=_code(previous.get("exitCode")),
            restart_count=int(raw.get("restartCount") or 0),
            ready=bool(raw.get("ready")),
        )
    return PodSeen(
        phase=str(status.get("phase") or ""),
        reason=str(status.get("reason") or ""),
        deleting=bool((pod.get("metadata") or {}).get("deletionTimestamp")),
        conditions=conditions,
        container=container,
    )


def _ended(scenario: Scenario, view: PodSeen) -> bool:
    """The scenario's last view (for scenarios that end without the pod being removed)."""
    if scenario.restarts:
        container = view.container
        return (
            container is not None
            and container.restart_count >= scenario.restarts
            and container.state == "waiting"
        )
    return view.phase in ("Succeeded", "Failed")


async def play(api: KubeApi, scenario: Scenario, node: str) -> tuple[Played, Placeholders]:
    """Play ``scenario`` on ``node``; the views it went through and what to replace in them."""
    name = "kcmp"
    async with _namespace(api, f"kcmp-{uuid.uuid4().hex[:6]}") as namespace:
        created = await api.create(PODS, manifest(scenario, name, namespace, node), namespace)
        marks = Placeholders(namespace, name, str(created["metadata"]["uid"]), node)
        events: asyncio.Queue[WatchEvent] = asyncio.Queue()
        version = str(created["metadata"]["resourceVersion"])
        watcher = asyncio.create_task(_follow(api, name, namespace, version, events))
        views: list[PodSeen] = []
        gone = False
        stopping: asyncio.Task[None] | None = None
        ended_at: float | None = None
        try:
            async with asyncio.timeout(scenario.longest):
                while not gone:
                    if ended_at is not None and time.monotonic() > ended_at + SETTLE_SECONDS:
                        break
                    try:
                        event = await asyncio.wait_for(events.get(), 0.5)
                    except TimeoutError:
                        continue
                    view = seen(event.object, marks)
                    if view.container is not None and (not views or views[-1] != view):
                        views.append(view)
                    gone = event.type == "DELETED"
                    ready_to_stop = (
                        view.container is not None
                        and view.container.restart_count >= 1
                        and view.container.state != "running"
                        if scenario.stop_in_backoff
                        else _running(event.object)
                    )
                    if scenario.stop and stopping is None and ready_to_stop:
                        stopping = asyncio.create_task(_stop(api, scenario, name, namespace))
                    if not scenario.stop and ended_at is None and _ended(scenario, view):
                        if scenario.restarts:
                            break
                        ended_at = time.monotonic()
        except TimeoutError:
            raise AssertionError(f"{scenario}: no end within {scenario.longest}s; seen {views}") from None
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            if stopping is not None:
                await stopping
        log = await _log(api, name, namespace) if scenario.read_log else ""
        return Played(tuple(views), log, gone), marks


async def _follow(
    api: KubeApi, name: str, namespace: str, version: str, into: asyncio.Queue[WatchEvent]
) -> None:
    """Every change of the pod from ``version`` on, across the server's watch timeouts."""
    while True:
        async with contextlib.aclosing(
            api.watch(
                PODS,
                namespace,
                resource_version=version,
                timeout_seconds=60,
                field_selector=f"metadata.name={name}",
            )
        ) as stream:
            async for event in stream:
                if event.type == "BOOKMARK":
                    version = str(event.object["metadata"]["resourceVersion"])
                    continue
                version = str(event.object["metadata"]["resourceVersion"])
                into.put_nowait(event)


def _running(pod: Mapping[str, Any]) -> bool:
    for raw in (pod.get("status") or {}).get("containerStatuses") or ():
        if (raw.get("state") or {}).get("running") is not None:
            return True
    return False


async def _stop(api: KubeApi, scenario: Scenario, name: str, namespace: str) -> None:
    await asyncio.sleep(1.0)  # the shell has set its trap by now on either node
    if scenario.stop == "delete":
        await api.delete(PODS, name, namespace)
    elif scenario.stop == "evict":
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        await api.create(PODS, eviction, namespace, subresource_of=name, subresource="eviction")


async def _log(api: KubeApi, name: str, namespace: str) -> str:
    chunks = []
    async with contextlib.aclosing(api.stream(PODS, name, namespace, subresource="log")) as stream:
        async for chunk in stream:
            chunks.append(chunk)
    return b"".join(chunks).decode()


@contextlib.asynccontextmanager
async def _namespace(api: KubeApi, namespace: str) -> AsyncIterator[str]:
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    try:
        await _service_account(api, namespace)
        yield namespace
    finally:
        with contextlib.suppress(NotFound):
            await api.delete(PODS, "kcmp", namespace, grace_period_seconds=0)
        with contextlib.suppress(NotFound):
            await api.delete(NAMESPACES, namespace)


async def _service_account(api: KubeApi, namespace: str) -> None:
    """Wait for the namespace's ``default`` ServiceAccount, which pod admission looks up."""
    deadline = time.monotonic() + 30
    while True:
        try:
            await api.get(SERVICE_ACCOUNTS, "default", namespace)
            return
        except NotFound:
            if time.monotonic() > deadline:
                raise
        except ApiError:
            return  # no ServiceAccounts served: nothing to wait for
        await asyncio.sleep(0.2)
