"""One pod's life on the node: create, run, restart with back-off, report, terminate, delete.

The worker handles one message at a time from its inbox (container exits, timers, pod updates), so
its state never races with itself. Every change is reported with a merge patch of ``pods/status``
composed by ``podstatus.compose_status``; the sequence a watcher sees is the kubelet's:
Pending (bound) -> ContainerCreating -> Running -> Completed/Error -> CrashLoopBackOff ->
Running (restartCount n) ... and, on deletion, Terminating -> a terminal phase -> gone.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kube.api import KubeApi
from kube.errors import ApiError, Conflict, NotFound
from kube.events import EventRecorder
from kube.patches import PatchType, compose_merge_patches
from kube.resources import PODS
from kubeobjects.quantity import parse_quantity
from kubeobjects.times import go_duration
from sandbox.kubelet import backoff as bo
from sandbox.kubelet.containers import (
    CONTAINER_CREATING,
    CRASH_LOOP_BACK_OFF,
    CREATE_CONFIG_ERROR,
    POD_INITIALIZING,
    RUN_CONTAINER_ERROR,
    START_ERROR,
    ContainerRecord,
    ContainerState,
    Running,
    Terminated,
    Waiting,
    after_exit,
    after_pod_stopped,
)
from sandbox.kubelet.envsources import fetch_env_sources
from sandbox.kubelet.envvars import EnvError, PodFacts, SourceKey, plan_launch
from sandbox.kubelet.logstore import LogStore
from sandbox.kubelet.nodeobject import HOST_IP
from sandbox.kubelet.podstatus import (
    TERMINAL_PHASES,
    PodView,
    compose_status,
    compute_phase,
    init_succeeded,
    should_restart,
)
from sandbox.kubelet.process import ContainerProcess, StartFailed
from sandbox.kubelet.slots import (
    ContainerMessage,
    ContainerSlot,
    Exited,
    Message,
    PodChanged,
    PodRemoved,
    RestartDue,
    ShowBackoff,
    earlier_restarts,
)
from sandbox.kubelet.writes import LatestWriter, retrying

logger = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 30.0
SHOWN_BEFORE_RESTART = 0.05
"""Seconds between reporting CrashLoopBackOff and the restart that the same kubelet sync makes."""


def memory_limit(container: Mapping[str, Any]) -> int | None:
    """The container's memory limit in bytes, if it has one."""
    limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
    return int(parse_quantity(limit)) if limit is not None else None


def now_text() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class WorkerSettings:
    state_dir: Path
    backoff: bo.BackoffPolicy = field(default_factory=bo.BackoffPolicy)
    start_delay: float = 0.2
    """Seconds between the ContainerCreating report and starting the processes ("image pull")."""
    sync_delay: float = 1.0
    """Seconds from a container's exit to the earliest restart (the kubelet's sync after the exit)."""
    restart_report_lag: float = 0.3
    """Seconds between restarting a container and reporting it Running. A kubelet learns of the
    new container from its next relist, so the program has had time to start (and, in the seed,
    to install its signal trap) before anyone can react to the new restart count."""


@dataclass(frozen=True)
class NodeFacts:
    name: str
    allocatable: Mapping[str, str]


@dataclass(eq=False)
class PodWorker:
    api: KubeApi
    pod: dict[str, Any]
    node: NodeFacts
    pod_ip: str
    logs: LogStore
    settings: WorkerSettings
    events: EventRecorder | None = None
    namespace: str = field(init=False)
    name: str = field(init=False)
    uid: str = field(init=False)
    _inbox: asyncio.Queue[Message] = field(default_factory=asyncio.Queue, init=False)
    _init_slots: dict[str, ContainerSlot] = field(default_factory=dict, init=False)
    _slots: dict[str, ContainerSlot] = field(default_factory=dict, init=False)
    _start_time: str = field(default_factory=now_text, init=False)
    _published_ip: str = field(default="", init=False)
    _final_phase: str | None = field(default=None, init=False)
    _gone: bool = field(default=False, init=False)
    _sandbox_ready: bool = field(default=False, init=False)
    """The pod's "sandbox" (its IP, its directories) is set up: from the first start on."""
    _waiters: set[asyncio.Task[None]] = field(default_factory=set, init=False)
    _status: LatestWriter[dict[str, Any]] = field(init=False)

    def __post_init__(self) -> None:
        meta = self.pod.get("metadata") or {}
        self.namespace = str(meta.get("namespace", ""))
        self.name = str(meta.get("name", ""))
        self.uid = str(meta.get("uid", ""))
        self._status = LatestWriter(
            f"pod {self._key} status", self._send_status, compose_merge_patches, on_gone=self._on_gone
        )

    # -- called by the agent ----------------------------------------------------------------

    def update(self, pod: dict[str, Any]) -> None:
        self.pod = pod
        self._inbox.put_nowait(PodChanged())

    def removed(self) -> None:
        self._inbox.put_nowait(PodRemoved())

    # -- helpers ----------------------------------------------------------------------------

    @property
    def _key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def _pod_ref(self) -> str:
        """The kubelet's way of naming a pod in messages: ``name_namespace(uid)``."""
        return f"{self.name}_{self.namespace}({self.uid})"

    @property
    def _deleting(self) -> bool:
        return bool((self.pod.get("metadata") or {}).get("deletionTimestamp"))

    @property
    def _restart_policy(self) -> str:
        return str((self.pod.get("spec") or {}).get("restartPolicy") or "Always")

    def _policy_of(self, slot: ContainerSlot) -> str:
        """The pod's restart policy as it applies to ``slot``: an init container never reruns on success."""
        policy = self._restart_policy
        if slot.record.name in self._init_slots and policy == "Always":
            return "OnFailure"
        return policy

    def _event(self, type_: str, reason: str, message: str) -> None:
        if self.events is None:
            return
        involved = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name, "namespace": self.namespace, "uid": self.uid},
        }
        self.events.record(involved, type_, reason, message)

    def _records(self) -> tuple[ContainerRecord, ...]:
        return tuple(slot.record for slot in self._slots.values())

    def _init_records(self) -> tuple[ContainerRecord, ...]:
        return tuple(slot.record for slot in self._init_slots.values())

    def _all_slots(self) -> list[ContainerSlot]:
        return [*self._init_slots.values(), *self._slots.values()]

    def _phase(self, deleting: bool = False) -> str:
        return compute_phase(self._restart_policy, self._records(), deleting, self._init_records())

    async def _publish(self) -> None:
        view = PodView(
            self._records(),
            HOST_IP,
            self._start_time,
            self._published_ip,
            sandbox_ready=self._sandbox_ready,
            deleting=self._deleting,
            init_containers=self._init_records(),
            sandbox_created=self._sandbox_ready or self._final_phase is not None,
        )
        status = compose_status(self.pod, view, now_text(), self._final_phase)
        await self._status.write({"status": status})

    async def _send_status(self, patch: dict[str, Any]) -> None:
        await self.api.patch(
            PODS, self.name, patch, self.namespace, patch_type=PatchType.MERGE, subresource="status"
        )

    def _on_gone(self) -> None:
        self._gone = True
        self._inbox.put_nowait(PodRemoved())

    async def _sources(self) -> dict[SourceKey, Mapping[str, str]]:
        spec = self.pod.get("spec") or {}
        containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        return await fetch_env_sources(self.api, self.namespace, containers)

    # -- the life ---------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            await self._live()
        finally:
            for slot in self._all_slots():
                slot.cancel_timers()
                if slot.process is not None:
                    await slot.process.stop(0)
            for waiter in list(self._waiters):
                waiter.cancel()
            await self._status.close()

    async def _live(self) -> None:
        phase = (self.pod.get("status") or {}).get("phase")
        if phase in TERMINAL_PHASES:
            self._final_phase = str(phase)
            await self._await_deletion()
            return
        spec = self.pod.get("spec") or {}
        earlier = earlier_restarts(self.pod)
        initializing = bool(spec.get("initContainers"))
        for container in spec.get("initContainers") or []:
            name = str(container.get("name", ""))
            record = ContainerRecord(name, str(container.get("image", "")), Waiting(POD_INITIALIZING))
            self._init_slots[name] = ContainerSlot(container, record)
        for container in spec.get("containers") or []:
            name = str(container.get("name", ""))
            # A pod this agent finds already started (the agent was restarted) restarts its containers.
            restarts = earlier[name] + 1 if name in earlier else 0
            waiting = Waiting(POD_INITIALIZING if initializing else CONTAINER_CREATING)
            record = ContainerRecord(name, str(container.get("image", "")), waiting, None, restarts)
            self._slots[name] = ContainerSlot(container, record)
        self.logs.register_pod(self.namespace, self.name, self.uid, [*self._init_slots, *self._slots])
        await self._publish()
        await asyncio.sleep(self.settings.start_delay)
        if not self._deleting and not self._gone:
            await self._advance()
        await self._event_loop()

    async def _advance(self) -> None:
        """Start what comes next: the first init container not yet done, else the app containers."""
        sources = await self._sources()
        self._published_ip = self.pod_ip
        self._sandbox_ready = True
        for slot in self._init_slots.values():
            if not init_succeeded(slot.record):
                await self._start(slot, sources, restart=False)
                await self._publish()
                return
        for slot in self._slots.values():
            await self._start(slot, sources, restart=False)
        await self._publish()

    async def _event_loop(self) -> None:
        await self._serve_inbox(self._terminate, self._on_message)
        # the pod is gone from the API: nothing left to report

    async def _await_deletion(self) -> None:
        await self._serve_inbox(self._final_delete, self._ignore)

    async def _serve_inbox(
        self, on_deleting: Callable[[], Awaitable[None]], handle: Callable[[Message], Awaitable[None]]
    ) -> None:
        """Handle inbox messages until the pod is deleting (then ``on_deleting``) or gone from the API."""
        while not self._gone:
            if self._deleting:
                await on_deleting()
                return
            message = await self._inbox.get()
            if isinstance(message, PodRemoved):
                return
            await handle(message)

    async def _ignore(self, message: Message) -> None:
        pass

    async def _on_message(self, message: Message) -> None:
        if not isinstance(message, ContainerMessage):
            return
        slot = self._slots.get(message.container) or self._init_slots.get(message.container)
        if slot is None or message.generation != slot.generation or self._final_phase is not None:
            return
        if isinstance(message, Exited):
            await self._on_exit(slot, message.returncode)
        elif isinstance(message, ShowBackoff):
            await self._show_backoff(slot)
        elif isinstance(message, RestartDue):
            ran_before = isinstance(slot.record.state, Terminated) or slot.record.last_state is not None
            await self._start(slot, await self._sources(), restart=ran_before)
            if ran_before:
                await asyncio.sleep(self.settings.restart_report_lag)
            await self._publish()

    async def _start(
        self, slot: ContainerSlot, sources: Mapping[SourceKey, Mapping[str, str]], *, restart: bool
    ) -> None:
        slot.cancel_timers()
        slot.restart_pending = False
        slot.generation += 1
        old = slot.record
        restart_count = old.restart_count + 1 if restart else old.restart_count
        last_state = old.state if restart and isinstance(old.state, Terminated) else old.last_state
        if restart and isinstance(old.state, Waiting) and old.last_state is not None:
            last_state = old.last_state
        last_id = old.container_id or old.last_container_id
        if restart:
            slot.backoff = bo.after_restart(slot.backoff, time.monotonic(), self.settings.backoff)
        facts = PodFacts(self.pod_ip, HOST_IP, self.node.allocatable)
        pod_dir = self.logs.pod_dir(self.namespace, self.name, self.uid)
        try:
            launch = plan_launch(
                self.pod, slot.spec, facts, sources, pod_dir, os.environ.get("PATH", "/usr/bin:/bin")
            )
        except EnvError as error:
            slot.record = replace(old, state=Waiting(CREATE_CONFIG_ERROR, str(error)))
            logger.warning("pod %s container %s: %s", self._key, old.name, error)
            self._event("Warning", "Failed", f"Error: {error}")
            retry = RestartDue(old.name, slot.generation)
            loop = asyncio.get_running_loop()
            slot.timers.append(loop.call_later(self.settings.backoff.initial, self._inbox.put_nowait, retry))
            return
        log_path = self.logs.new_instance(self.uid, self.namespace, self.name, old.name, restart_count)
        started = now_text()
        container_id = f"sandbox://{self.uid[:8]}-{old.name}-{restart_count}"
        try:
            process = await ContainerProcess.start(
                launch.argv, launch.env, launch.cwd, log_path, memory_limit(slot.spec)
            )
        except StartFailed as error:
            self._event("Warning", "Failed", f'Error: failed to start container "{old.name}": {error}')
            self.logs.instance_ended(self.uid, old.name)
            failure = Terminated(128, started, now_text(), special_reason=START_ERROR, message=str(error))
            slot.record = ContainerRecord(
                old.name, old.image, failure, last_state, restart_count, container_id, last_id
            )
            if should_restart(self._policy_of(slot), failure.exit_code):
                # The kubelet remembers why the start failed and shows it while a retry is due.
                slot.record = ContainerRecord(
                    old.name,
                    old.image,
                    Waiting(RUN_CONTAINER_ERROR, failure.message),
                    failure,
                    restart_count,
                    "",
                    container_id,
                    earlier_state=last_state,
                )
            self._inbox.put_nowait(Exited(old.name, slot.generation, 128))
            return
        slot.process = process
        self._event("Normal", "Pulled", f'Container image "{old.image}" already present on machine')
        self._event("Normal", "Created", f"Created container: {old.name}")
        self._event("Normal", "Started", f"Started container {old.name}")
        slot.record = ContainerRecord(
            old.name, old.image, Running(started), last_state, restart_count, container_id, last_id
        )
        logger.info(
            "pod %s container %s started (pid %d, restart %d)",
            self._key,
            old.name,
            process.pid,
            restart_count,
        )
        waiter = asyncio.create_task(self._watch_process(old.name, slot.generation, process))
        self._waiters.add(waiter)
        waiter.add_done_callback(self._waiters.discard)

    async def _watch_process(self, container: str, generation: int, process: ContainerProcess) -> None:
        returncode = await process.wait()
        self._inbox.put_nowait(Exited(container, generation, returncode))

    async def _on_exit(self, slot: ContainerSlot, returncode: int) -> None:
        oom_killed = slot.process is not None and slot.process.oom_killed
        slot.process = None
        slot.finished_mono = time.monotonic()
        record = slot.record
        self.logs.instance_ended(self.uid, record.name)
        slot.record = after_exit(record, returncode, now_text(), oom_killed)
        state: ContainerState | None = slot.record.state
        if isinstance(state, Waiting) and state.reason == RUN_CONTAINER_ERROR:
            state = slot.record.last_state
        if not isinstance(state, Terminated):
            return
        logger.info("pod %s container %s exited with %d", self._key, record.name, state.exit_code)
        if record.name in self._init_slots and state.exit_code == 0:
            await self._advance()
            return
        if should_restart(self._policy_of(slot), state.exit_code):
            delay = bo.restart_delay(slot.backoff, slot.finished_mono, self.settings.backoff)
            await self._publish()
            slot.restart_pending = True
            loop = asyncio.get_running_loop()
            generation = slot.generation
            # Even a restart "at once" waits for the kubelet's next sync, as the seed's 1 s gaps show.
            restart_after = max(delay, self.settings.sync_delay)
            if delay > 0:
                # The kubelet's next sync after a crash comes when the back-off ends, or after its
                # resync period if that is sooner: only then does it show CrashLoopBackOff, and a
                # sync at the back-off's end restarts the container right after showing it.
                show_after = min(delay, self.settings.backoff.resync)
                if show_after >= restart_after:
                    restart_after = show_after + SHOWN_BEFORE_RESTART
                slot.timers.append(
                    loop.call_later(show_after, self._inbox.put_nowait, ShowBackoff(record.name, generation))
                )
            slot.timers.append(
                loop.call_later(restart_after, self._inbox.put_nowait, RestartDue(record.name, generation))
            )
            return
        phase = self._phase()
        if phase in TERMINAL_PHASES and not any(s.restart_pending for s in self._all_slots()):
            self._final_phase = phase
            logger.info("pod %s finished: %s", self._key, phase)
        await self._publish()
        if self._final_phase is not None:
            await self._await_deletion()
            self._gone = True

    async def _show_backoff(self, slot: ContainerSlot) -> None:
        record = slot.record
        termination: Terminated | None = None
        if isinstance(record.state, Terminated):
            termination, termination_id, earlier = record.state, record.container_id, record.last_state
        elif isinstance(record.state, Waiting) and record.state.reason == RUN_CONTAINER_ERROR:
            termination, termination_id = record.last_state, record.last_container_id
            earlier = record.earlier_state
        if termination is None:
            return
        delay = bo.restart_delay(slot.backoff, slot.finished_mono, self.settings.backoff)
        message = (
            f"back-off {go_duration(delay)} restarting failed container={record.name} pod={self._pod_ref}"
        )
        slot.record = ContainerRecord(
            record.name,
            record.image,
            Waiting(CRASH_LOOP_BACK_OFF, message),
            termination,
            record.restart_count,
            "",
            termination_id,
            earlier,
        )
        self.logs.set_waiting(self.uid, record.name, CRASH_LOOP_BACK_OFF)
        self._event(
            "Warning",
            "BackOff",
            f"Back-off restarting failed container {record.name} in pod {self._pod_ref}",
        )
        await self._publish()

    def _grace_seconds(self) -> float:
        meta = self.pod.get("metadata") or {}
        spec = self.pod.get("spec") or {}
        for value in (meta.get("deletionGracePeriodSeconds"), spec.get("terminationGracePeriodSeconds")):
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
        return DEFAULT_GRACE_SECONDS

    async def _terminate(self) -> None:
        """Graceful deletion: stop every container within the grace period, report, then delete."""
        grace = self._grace_seconds()
        logger.info("pod %s is being deleted; stopping containers (grace %.0fs)", self._key, grace)
        running = [slot for slot in self._all_slots() if slot.process is not None]
        for slot in running:
            self._event("Normal", "Killing", f"Stopping container {slot.record.name}")
        for slot in self._all_slots():
            slot.cancel_timers()
            slot.restart_pending = False
            slot.generation += 1
        codes = await asyncio.gather(
            *(slot.process.stop(grace) for slot in running if slot.process is not None)
        )
        for slot, returncode in zip(running, codes, strict=True):
            slot.process = None
            self.logs.instance_ended(self.uid, slot.record.name)
            slot.record = after_exit(slot.record, returncode, now_text())
        for slot in self._all_slots():
            slot.record = after_pod_stopped(slot.record, now_text())
        if self._final_phase is None:
            self._final_phase = self._phase(deleting=True)
        await self._publish()
        await self._final_delete()

    async def _final_delete(self) -> None:
        """The kubelet's last word on a pod: delete it for good, once its containers are stopped
        and its final status is written (retried for as long as the API server is away)."""
        await self._status.settled()

        async def delete() -> None:
            await self.api.delete(
                PODS, self.name, self.namespace, grace_period_seconds=0, uid_precondition=self.uid
            )

        try:
            await retrying(delete, f"pod {self._key}: final delete")
            logger.info("pod %s deleted", self._key)
        except (NotFound, Conflict):
            pass  # gone already, or a new pod of that name: not ours to delete
        except ApiError as error:
            logger.error("pod %s: final delete failed for good: %s", self._key, error)
        self._gone = True
