"""``kubectl tfjob logs``: the log of one replica, named by its role (``worker-0``, ``ps``, ``chief``).

The pod is found by the operator's naming rule (``<job>-<rtype>-<index>``) after the replica is
checked against the job's spec, so a typo gets a list of the replicas there are instead of a
NotFound for a made-up pod name. Without ``--replica`` it is the job's master-role replica: the
chief (or master) when there is one, else worker 0, as upstream marks ``job-role: master``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from kube.api import KubeApi
from kube.resources import PODS
from kubectl_tfjob.resources import TFJOBS
from tfjob.constants import CHIEF, CONTAINER_NAME, MASTER, WORKER
from tfjob.facts import read_facts
from tfjob.naming import replica_name
from tfjob.wire import TFJob

_REPLICA = re.compile(r"^(?P<rtype>[A-Za-z][A-Za-z0-9]*?)(?:-(?P<index>[0-9]+))?$")
# Bounds a log read that is not followed: a dead connection must not hang the command.
IDLE_TIMEOUT_SECONDS = 60.0


class ReplicaError(ValueError):
    """The replica asked for is not in the job; the message lists those that are."""


@dataclass(frozen=True)
class LogOptions:
    replica: str | None = None
    container: str = CONTAINER_NAME
    follow: bool = False
    previous: bool = False
    tail: int | None = None


def replica_pod_name(job: TFJob, replica: str | None) -> str:
    """The pod name of ``replica`` (``worker-1``, ``Worker-1``, ``ps`` for ps-0) in a stored job."""
    facts = read_facts(job)
    job_name = facts.name
    counts = {replica.rtype: replica.replicas for replica in facts.replica_types}
    known = ", ".join(f"{key.lower()}-{i}" for key, n in counts.items() for i in range(n)) or "none"
    if replica is None:
        for rtype in (CHIEF, MASTER, WORKER):
            if counts.get(rtype) and facts.is_master_role(rtype, 0):
                return replica_name(job_name, rtype, 0)
        raise ReplicaError(f"TFJob {job_name} has no chief, master or worker: give --replica ({known})")
    match = _REPLICA.match(replica)
    wanted = match["rtype"].lower() if match else ""
    found = next((key for key in counts if key.lower() == wanted), None)
    index = int(match["index"]) if match and match["index"] is not None else 0
    if found is None or index >= counts[found]:
        raise ReplicaError(f"TFJob {job_name} has no replica {replica!r}; its replicas: {known}")
    return replica_name(job_name, found, index)


async def stream_logs(api: KubeApi, name: str, namespace: str, options: LogOptions) -> AsyncIterator[bytes]:
    """The replica's log as it arrives; ``NotFound`` when the job or its pod does not exist."""
    job: Any = await api.get(TFJOBS, name, namespace)
    pod_name = replica_pod_name(job, options.replica)
    query = [("container", options.container)]
    if options.follow:
        query.append(("follow", "true"))
    if options.previous:
        query.append(("previous", "true"))
    if options.tail is not None:
        query.append(("tailLines", str(options.tail)))
    chunks = api.stream(
        PODS,
        pod_name,
        namespace,
        subresource="log",
        query=query,
        idle_timeout=None if options.follow else IDLE_TIMEOUT_SECONDS,
    )
    try:
        async for chunk in chunks:
            yield chunk
    finally:
        await chunks.aclose()
