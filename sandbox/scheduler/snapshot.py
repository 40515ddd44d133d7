"""The cluster as one scheduling session sees it: nodes, tasks (pods), gangs (PodGroups), queues.

Built from raw API objects by pure functions; everything here is an immutable value, so a session
can be computed, tested and compared without any I/O.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubeobjects.meta import Meta
from kubeobjects.pods import PodPhase
from kubeobjects.quantity import QuantityError
from sandbox.scheduler.resources import add, node_allocatable, parse_resources, pod_demand

GROUP_NAME_ANNOTATION: Final = "scheduling.k8s.io/group-name"
TASK_SPEC_KEY: Final = "volcano.sh/task-spec"
DEFAULT_QUEUE: Final = "default"


class SchedulerName(enum.StrEnum):
    """The two schedulers the sandbox plays, by the ``schedulerName`` pods ask for them with; each
    also records its events under that name."""

    VOLCANO = "volcano"
    DEFAULT = "default-scheduler"


class TaskStatus(enum.Enum):
    """Volcano's view of a pod: where it is in its life as far as scheduling is concerned."""

    PENDING = "Pending"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


OCCUPYING: Final = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.RELEASING})
"""Statuses whose pod holds resources on its node."""


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class NodeInfo:
    name: str
    allocatable: Mapping[str, int]
    used: Mapping[str, int]
    ready: bool
    unschedulable: bool
    labels: Mapping[str, str]
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True)
class ObjectRef:
    """A namespaced object a session decides about: where it is, and which incarnation (its uid)."""

    namespace: str
    name: str
    uid: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class TaskInfo(ObjectRef):
    demand: Mapping[str, int]
    status: TaskStatus
    node_name: str
    scheduler_name: str
    group_name: str
    role: str
    priority: int
    created: str
    node_selector: Mapping[str, str]
    tolerations: tuple[Mapping[str, Any], ...]
    affinity_terms: tuple[Mapping[str, Any], ...]
    scheduled_condition: Mapping[str, Any] | None


@dataclass(frozen=True)
class NetworkTopology:
    """A PodGroup's ``spec.networkTopology``: ``hard`` keeps the gang inside one HyperNode of a tier
    up to ``highest_tier`` (None: any tier); ``soft`` prefers that and falls back to any nodes."""

    mode: str
    highest_tier: int | None
    highest_tier_name: str | None = None
    """The limit by a tier's name (``highestTierName``), looked up in the HyperNodes' ``tierName``."""

    @property
    def hard(self) -> bool:
        return self.mode != "soft"

    def allowed_tier(self, hypernodes: Sequence[HyperNodeInfo]) -> int | None:
        """The highest tier the gang may spread over: ``highestTierAllowed``, else the tier whose
        HyperNodes carry ``highestTierName`` (Volcano's allocate looks the name up the same way
        and, finding none, sets no limit); None: any tier."""
        if self.highest_tier is not None or self.highest_tier_name is None:
            return self.highest_tier
        for hypernode in hypernodes:
            if hypernode.tier_name == self.highest_tier_name:
                return hypernode.tier
        return None


@dataclass(frozen=True)
class HyperNodeInfo:
    """A HyperNode with its members resolved down to node names."""

    name: str
    tier: int
    nodes: frozenset[str]
    tier_name: str = ""


@dataclass(frozen=True)
class JobInfo(ObjectRef):
    """A PodGroup and the tasks that name it."""

    min_member: int
    min_resources: Mapping[str, int] | None
    queue: str
    phase: str
    conditions: tuple[Mapping[str, Any], ...]
    counters: Mapping[str, int]
    created: str
    tasks: tuple[TaskInfo, ...] = ()
    min_task_member: Mapping[str, int] = field(default_factory=dict)
    """Per-role minimums by ``volcano.sh/task-spec`` (``spec.minTaskMember``), zeros left out."""
    network_topology: NetworkTopology | None = None

    @property
    def priority(self) -> int:
        return max((task.priority for task in self.tasks), default=0)

    @property
    def checks_roles(self) -> bool:
        """Volcano enforces ``minTaskMember`` only when ``minMember`` covers their sum."""
        return bool(self.min_task_member) and self.min_member >= sum(self.min_task_member.values())


@dataclass(frozen=True)
class QueueInfo:
    name: str
    capability: Mapping[str, int] | None
    state: str


@dataclass(frozen=True)
class Snapshot:
    nodes: tuple[NodeInfo, ...]
    jobs: tuple[JobInfo, ...]
    queues: Mapping[str, QueueInfo]
    plain_tasks: tuple[TaskInfo, ...]
    """Pending pods of the plain (non-Volcano) scheduler."""
    problems: tuple[str, ...] = field(default=())
    """Objects skipped because they could not be read (bad quantities and the like)."""
    hypernodes: tuple[HyperNodeInfo, ...] = ()
    """HyperNodes by tier, then name."""


def task_status(pod: Mapping[str, Any]) -> TaskStatus:
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    phase = status.get("phase")
    if phase == PodPhase.SUCCEEDED:
        return TaskStatus.SUCCEEDED
    if phase == PodPhase.FAILED:
        return TaskStatus.FAILED
    if not spec.get("nodeName"):
        return TaskStatus.PENDING
    if Meta(pod).deleting:
        return TaskStatus.RELEASING
    if phase == PodPhase.RUNNING:
        return TaskStatus.RUNNING
    return TaskStatus.BOUND


def _scheduled_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "PodScheduled":
            return condition
    return None


def build_task(pod: Mapping[str, Any]) -> TaskInfo:
    meta = Meta(pod)
    spec = pod.get("spec") or {}
    annotations, labels = meta.annotations, meta.labels
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return TaskInfo(
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid,
        demand=pod_demand(pod),
        status=task_status(pod),
        node_name=str(spec.get("nodeName") or ""),
        scheduler_name=str(spec.get("schedulerName") or SchedulerName.DEFAULT),
        group_name=str(annotations.get(GROUP_NAME_ANNOTATION) or ""),
        role=str(annotations.get(TASK_SPEC_KEY) or labels.get(TASK_SPEC_KEY) or ""),
        priority=int(spec.get("priority") or 0),
        created=str(meta.raw.get("creationTimestamp") or ""),
        node_selector=dict(spec.get("nodeSelector") or {}),
        tolerations=tuple(spec.get("tolerations") or ()),
        affinity_terms=tuple(affinity.get("nodeSelectorTerms") or ()),
        scheduled_condition=_scheduled_condition(pod),
    )


def _node_ready(node: Mapping[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def build_node(node: Mapping[str, Any], tasks_on_node: Iterable[TaskInfo]) -> NodeInfo:
    meta = Meta(node)
    spec = node.get("spec") or {}
    taints = tuple(
        Taint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
        for t in spec.get("taints") or []
        if isinstance(t, Mapping)
    )
    return NodeInfo(
        name=meta.name,
        allocatable=node_allocatable(node),
        used=add(*(task.demand for task in tasks_on_node if task.status in OCCUPYING)),
        ready=_node_ready(node),
        unschedulable=bool(spec.get("unschedulable")),
        labels=dict(meta.labels),
        taints=taints,
    )


def build_job(podgroup: Mapping[str, Any], tasks: Sequence[TaskInfo]) -> JobInfo:
    meta = Meta(podgroup)
    spec = podgroup.get("spec") or {}
    status = podgroup.get("status") or {}
    raw_min = spec.get("minResources")
    return JobInfo(
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid,
        min_member=int(spec.get("minMember") or 0),
        min_resources=None if raw_min is None else parse_resources(raw_min),
        queue=str(spec.get("queue") or DEFAULT_QUEUE),
        phase=str(status.get("phase") or ""),
        conditions=tuple(c for c in status.get("conditions") or [] if isinstance(c, Mapping)),
        counters={k: int(status.get(k) or 0) for k in ("running", "succeeded", "failed")},
        created=str(meta.raw.get("creationTimestamp") or ""),
        tasks=tuple(tasks),
        min_task_member=_min_task_member(spec.get("minTaskMember")),
        network_topology=_network_topology(spec.get("networkTopology")),
    )


def _network_topology(raw: Any) -> NetworkTopology | None:
    if not isinstance(raw, Mapping):
        return None
    tier = raw.get("highestTierAllowed")
    tier_name = raw.get("highestTierName")
    return NetworkTopology(
        mode=str(raw.get("mode") or "hard"),
        highest_tier=tier if isinstance(tier, int) and not isinstance(tier, bool) else None,
        highest_tier_name=tier_name if isinstance(tier_name, str) and tier_name else None,
    )


def _selected(selector: Mapping[str, Any], name: str, labels: Mapping[str, str]) -> bool:
    exact = selector.get("exactMatch")
    if isinstance(exact, Mapping):
        return exact.get("name") == name
    regex = selector.get("regexMatch")
    if isinstance(regex, Mapping):
        try:
            return re.search(str(regex.get("pattern") or ""), name) is not None
        except re.error:
            return False
    label_match = selector.get("labelMatch")
    if isinstance(label_match, Mapping):
        wanted = label_match.get("matchLabels") or {}
        return bool(wanted) and all(labels.get(key) == value for key, value in wanted.items())
    return False


def build_hypernodes(
    hypernodes: Iterable[Mapping[str, Any]], nodes: Sequence[NodeInfo]
) -> tuple[HyperNodeInfo, ...]:
    """Each HyperNode's members resolved to node names: Node members by their selector, HyperNode
    members (exact or regex name) through their own members; a cycle adds nothing."""
    raw = {Meta(h).name: h for h in hypernodes}

    def resolve(name: str, seen: frozenset[str]) -> frozenset[str]:
        found: set[str] = set()
        spec = raw[name].get("spec") or {}
        for member in spec.get("members") or []:
            if not isinstance(member, Mapping):
                continue
            selector = member.get("selector") or {}
            if member.get("type", "Node") == "HyperNode":
                for child in raw:
                    if child not in seen and _selected(selector, child, {}):
                        found |= resolve(child, seen | {child})
            else:
                found |= {node.name for node in nodes if _selected(selector, node.name, node.labels)}
        return frozenset(found)

    infos = []
    for name, body in raw.items():
        spec = body.get("spec") or {}
        tier, tier_name = spec.get("tier"), spec.get("tierName")
        infos.append(
            HyperNodeInfo(
                name,
                tier if isinstance(tier, int) else 0,
                resolve(name, frozenset({name})),
                tier_name if isinstance(tier_name, str) else "",
            )
        )
    return tuple(sorted(infos, key=lambda h: (h.tier, h.name)))


def _min_task_member(raw: Any) -> dict[str, int]:
    if not isinstance(raw, Mapping):
        return {}
    return {
        str(role): int(count)
        for role, count in raw.items()
        if isinstance(count, int) and not isinstance(count, bool) and count > 0
    }


def build_queue(queue: Mapping[str, Any]) -> QueueInfo:
    spec = queue.get("spec") or {}
    capability = spec.get("capability")
    return QueueInfo(
        name=Meta(queue).name,
        capability=None if not capability else parse_resources(capability),
        state=str((queue.get("status") or {}).get("state") or ""),
    )


def build_snapshot(
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    podgroups: Iterable[Mapping[str, Any]],
    queues: Iterable[Mapping[str, Any]],
    hypernodes: Iterable[Mapping[str, Any]] = (),
    *,
    gang_scheduler_names: frozenset[str] = frozenset({SchedulerName.VOLCANO}),
    plain_scheduler_names: frozenset[str] = frozenset({SchedulerName.DEFAULT}),
) -> Snapshot:
    problems: list[str] = []
    tasks: list[TaskInfo] = []
    for pod in pods:
        try:
            tasks.append(build_task(pod))
        except (QuantityError, TypeError, ValueError) as error:
            problems.append(f"pod {Meta(pod).key}: {error}")
    by_node: dict[str, list[TaskInfo]] = {}
    for task in tasks:
        if task.node_name:
            by_node.setdefault(task.node_name, []).append(task)
    node_infos: list[NodeInfo] = []
    for node in nodes:
        try:
            node_infos.append(build_node(node, by_node.get(Meta(node).name, [])))
        except (QuantityError, TypeError, ValueError) as error:
            problems.append(f"node {Meta(node).name}: {error}")
    by_group: dict[tuple[str, str], list[TaskInfo]] = {}
    plain: list[TaskInfo] = []
    for task in tasks:
        if task.scheduler_name in gang_scheduler_names and task.group_name:
            by_group.setdefault((task.namespace, task.group_name), []).append(task)
        elif task.scheduler_name in plain_scheduler_names and task.status is TaskStatus.PENDING:
            plain.append(task)
    jobs: list[JobInfo] = []
    for podgroup in podgroups:
        meta = Meta(podgroup)
        members = by_group.get((meta.namespace, meta.name), [])
        try:
            jobs.append(build_job(podgroup, sorted(members, key=lambda t: (t.created, t.name))))
        except (QuantityError, TypeError, ValueError) as error:
            problems.append(f"podgroup {meta.key}: {error}")
    queue_infos: dict[str, QueueInfo] = {}
    for queue in queues:
        try:
            info = build_queue(queue)
        except (QuantityError, TypeError, ValueError) as error:
            problems.append(f"queue {Meta(queue).name}: {error}")
            continue
        queue_infos[info.name] = info
    return Snapshot(
        nodes=tuple(sorted(node_infos, key=lambda n: n.name)),
        jobs=tuple(jobs),
        queues=queue_infos,
        plain_tasks=tuple(sorted(plain, key=lambda t: (t.created, t.namespace, t.name))),
        problems=tuple(problems),
        hypernodes=build_hypernodes(hypernodes, node_infos),
    )
