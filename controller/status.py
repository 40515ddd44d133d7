"""Writing a TFJob's status: a merge patch on the ``status`` subresource, only when it changed.

The patch is the smallest RFC 7386 merge patch from the status the pass planned from to the new
one (lists such as ``conditions`` go whole). If the API server stores something other than what
we sent (a schema that prunes a field, say), planning again would produce the same status on every
pass and each write would trigger the next; ``StatusWriter`` remembers what each job's last write
asked for and got back, and skips asking for the same status while the job still holds that answer.

Counts-only changes wait a moment. A job's pods are created, start and stop a moment apart, and
each step moves only ``replicaStatuses`` counts (and, once, sets ``startTime``): written one by
one, a four-replica job costs half as many status writes again as the planner's budget allows.
Such a change is held back for ``batch_seconds`` from the first one, folded with any that follow,
and then written (the reconciler requeues the job for that moment, ``due_in``); the first
``startTime`` planned is the one written. Anything else, a condition above all, is written at once
and carries the latest counts with it; a rising ``failed`` count is never held back (the backoff
rules read it from the stored status). A controller that dies while holding a change back loses
nothing but that moment: its successor plans the same status from what it observes.

A job's first status waits the same moment while its gang waits for Volcano: the plain Created
condition and when the wait began (``lastReconcileTime``), nothing else. Volcano usually admits a
gang within that moment, and the pass that then creates the pods writes Created together with
``startTime`` and the first counts: one status write instead of two, the job's first write being
the costliest for the API server (a TFJob is a large object under a large schema, and every write
of it is validated and field-managed whole). The write carries the wait's start as first planned,
so the stored status ends the same as when written one by one. A gang that waits longer gets its
Created condition written when the moment is over.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from controller.metrics import ControllerMetrics
from controller.resources import TFJOBS
from kube.api import KubeApi
from kube.ownwrites import OwnWrites
from kube.patches import PatchType, merge_patch
from tfjob.constants import COND_CREATED, REASON_CREATED
from tfjob.planner.waiting import created_message
from tfjob.wire import JobStatus

logger = logging.getLogger(__name__)

BATCH_SECONDS: Final = 1.5
_COUNTS: Final = frozenset({"active", "succeeded", "failed"})
_HOLDABLE: Final = frozenset({"replicaStatuses", "startTime"})
_FIRST_WHILE_WAITING: Final = frozenset({"conditions", "lastReconcileTime"})
# Timestamps a held-back write keeps as first planned, so the fold ends where single writes would.
_FIRST_PLANNED: Final = ("startTime", "lastReconcileTime")


def _status_of(job: Mapping[str, Any]) -> dict[str, Any]:
    status = job.get("status")
    return dict(status) if isinstance(status, Mapping) else {}


def _count(entry: Mapping[str, Any], key: str) -> int:
    value = entry.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def counts_only(patch: Mapping[str, Any], old_status: Mapping[str, Any]) -> bool:
    """Whether ``patch`` only moves replica counts (and sets the first ``startTime``): no
    condition, no restart count, no rising ``failed`` count."""
    if not patch or not set(patch) <= _HOLDABLE:
        return False
    if "startTime" in patch and (old_status.get("startTime") or not patch["startTime"]):
        return False  # a clock that restarts (resume after suspend) is not a count
    counts = patch.get("replicaStatuses", {})
    if not isinstance(counts, Mapping):
        return False
    found = old_status.get("replicaStatuses")
    old: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    for rtype, entry in counts.items():
        if not isinstance(entry, Mapping) or not set(entry) <= _COUNTS:
            return False
        before = old.get(rtype)
        if _count(entry, "failed") > _count(before if isinstance(before, Mapping) else {}, "failed"):
            return False
    return True


def first_while_gang_waits(patch: Mapping[str, Any], old_status: Mapping[str, Any], job_name: str) -> bool:
    """Whether ``patch`` is a job's first status while its gang waits for admission: the plain
    Created condition and when the wait began, on a job no condition has been written for."""
    if old_status.get("conditions") or set(patch) != _FIRST_WHILE_WAITING:
        return False
    conditions = patch["conditions"]
    if not isinstance(conditions, list) or len(conditions) != 1:
        return False
    created = conditions[0]
    return (
        isinstance(created, Mapping)
        and created.get("type") == COND_CREATED
        and created.get("reason") == REASON_CREATED
        and created.get("message") == created_message(job_name)
    )


@dataclass
class StatusWriter:
    """Writes a job's status when it changed, holding back changes that only move counts and a
    first status written while the gang waits."""

    api: KubeApi
    writes: OwnWrites
    metrics: ControllerMetrics
    batch_seconds: float = field(default=BATCH_SECONDS, kw_only=True)
    clock: Callable[[], float] = field(default=time.monotonic, kw_only=True)
    # job uid -> (the status we last asked for, the status the server returned instead)
    _last: dict[str, tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=dict, init=False)
    # job uid -> when the counts change being held back was first seen (monotonic)
    _held: dict[str, float] = field(default_factory=dict, init=False)
    # job uid -> the timestamps (startTime, lastReconcileTime) first planned while its write was held back
    _held_times: dict[str, dict[str, str]] = field(default_factory=dict, init=False)

    def forget(self, job_uid: str) -> None:
        self._last.pop(job_uid, None)
        self.forget_held(job_uid)

    def forget_held(self, job_uid: str) -> None:
        self._held.pop(job_uid, None)
        self._held_times.pop(job_uid, None)

    def _with_first_planned_times(
        self, uid: str, old_status: Mapping[str, Any], new_status: JobStatus
    ) -> JobStatus:
        """``new_status`` with the timestamps first planned while its write was held back: the
        first ``startTime`` where one is planned, and the first wait's start, also where the pass
        that ends the wait no longer plans one (each held-back pass plans it anew)."""
        times = self._held_times.get(uid)
        if not times:
            return new_status
        merged = new_status.copy()
        start = times.get("startTime")
        if start and merged.get("startTime") and not old_status.get("startTime"):
            merged["startTime"] = start
        waited = times.get("lastReconcileTime")
        if waited and not old_status.get("lastReconcileTime"):
            merged["lastReconcileTime"] = waited
        return merged

    def due_in(self, job_uid: str) -> float | None:
        """Seconds until the change held back for the job is written; None if none is."""
        held = self._held.get(job_uid)
        if held is None:
            return None
        return max(0.0, held + self.batch_seconds - self.clock())

    async def write(self, job: Mapping[str, Any], new_status: JobStatus) -> bool:
        """Patch ``job``'s status to ``new_status`` if it differs and is not held back; True when
        a write was sent."""
        old_status = _status_of(job)
        metadata = job.get("metadata") or {}
        uid = str(metadata.get("uid") or "")
        new_status = self._with_first_planned_times(uid, old_status, new_status)
        patch = merge_patch(old_status, dict(new_status))
        if not patch:
            self.forget_held(uid)
            return False
        if self.batch_seconds > 0 and (
            counts_only(patch, old_status)
            or first_while_gang_waits(patch, old_status, str(metadata.get("name") or ""))
        ):
            now = self.clock()
            if now < self._held.setdefault(uid, now) + self.batch_seconds:
                times = self._held_times.setdefault(uid, {})
                for key in _FIRST_PLANNED:
                    if patch.get(key):
                        times.setdefault(key, str(patch[key]))
                return False
        self.forget_held(uid)
        last = self._last.get(uid)
        if last is not None and last[0] == new_status and last[1] == old_status:
            logger.warning(
                "the API server does not keep status fields %s; not writing them again", sorted(patch)
            )
            return False
        updated = await self.api.patch(
            TFJOBS,
            str(metadata.get("name") or ""),
            {"status": patch},
            str(metadata.get("namespace") or ""),
            patch_type=PatchType.MERGE,
            subresource="status",
        )
        self.metrics.count_write(TFJOBS.plural, "patch-status")
        self.writes.wrote(TFJOBS.plural, updated)
        returned = _status_of(updated)
        if returned == new_status:
            self._last.pop(uid, None)  # the server kept everything: nothing to guard against
        else:
            self._last[uid] = (copy.deepcopy(dict(new_status)), returned)
        return True
