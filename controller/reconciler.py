"""One reconcile pass for one job key: read the caches, plan, carry out, write status, report.

The pass never decides anything itself: ``tfjob.planner.plan`` does, from the cached job and its
children (corrected by the controller's own writes). Actions run in plan order (so the PodGroup
exists before any pod), except that a run of pod and service creates goes out concurrently; a
failed action ends the pass with an error once its batch is done, and the work queue
retries the key with backoff. Nothing half-made is remembered: the next pass plans again from
what it observes. The status is written only after every action succeeded, and only if changed;
the exceptions are a create the API refuses, which the Created condition reports at once, and the
pass that finishes the job, whose verdict is written before its cleanup actions run. A
change of replica counts alone is held back briefly (``controller.status``) and the job requeued
for the moment it is due.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from controller.actions import ActionFailed, ActionRunner, Outcome
from controller.admission import NotAdmitted
from controller.caches import JobCaches
from controller.metrics import ControllerMetrics
from controller.scope import OutsideScopeNotices, outside_scope_event
from controller.status import StatusWriter
from kube.errors import ApiError
from kube.logs import log_fields
from kubeobjects.meta import Meta
from tfjob.planner import COUNTER_CREATED, Observed, plan
from tfjob.planner.actions import Action, CreatePod, CreatePodGroup, CreateService, Event
from tfjob.planner.conditions import is_finished
from tfjob.planner.waiting import refused_creation_status, unadmitted_pod_status
from tfjob.settings import Settings

logger = logging.getLogger(__name__)

# (involved object, event) -> None; the recorder aggregates repeats (D10).
RecordEvent = Callable[[Mapping[str, Any], Event], None]


# Answers that mean the API will not create the object as asked until something changes: the
# request (400), a quota or an admission webhook (403), the object itself (422).
_REFUSALS = frozenset({400, 403, 422})

# Pods and services of different replicas do not depend on each other, so a run of their creates
# goes out at once; everything else (the PodGroup first of all) keeps plan order.
_PARALLEL = (CreatePod, CreateService)


def batches(actions: tuple[Action, ...]) -> list[tuple[Action, ...]]:
    """Split the plan into batches: runs of pod/service creates together, anything else alone."""
    grouped: list[tuple[Action, ...]] = []
    run: list[Action] = []
    for action in actions:
        if isinstance(action, _PARALLEL):
            run.append(action)
            continue
        if run:
            grouped.append(tuple(run))
            run = []
        grouped.append((action,))
    if run:
        grouped.append(tuple(run))
    return grouped


@dataclass(frozen=True)
class PassResult:
    """What one pass did: how many API writes, and when the planner wants to run again."""

    requeue_after: float | None
    writes: int
    status_written: bool


def _finishes(job: Mapping[str, Any], new_status: Mapping[str, Any]) -> bool:
    """Whether ``new_status`` makes the job Succeeded or Failed for the first time."""
    old = job.get("status")
    old_conditions = (old.get("conditions") if isinstance(old, Mapping) else None) or []
    return is_finished(new_status.get("conditions") or []) and not is_finished(old_conditions)


@dataclass
class Reconciler:
    """What a pass reads from (the caches), acts and writes with, and reports to."""

    caches: JobCaches
    runner: ActionRunner
    status: StatusWriter
    record: RecordEvent
    metrics: ControllerMetrics
    settings: Settings
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    outside_scope: OutsideScopeNotices = field(default_factory=OutsideScopeNotices)

    async def reconcile(self, key: str) -> PassResult:
        started = time.monotonic()
        ok = False
        try:
            result = await self._reconcile(key)
            ok = True
            return result
        finally:
            self.metrics.observe_reconcile(time.monotonic() - started, ok)

    async def _reconcile(self, key: str) -> PassResult:
        job = self.caches.job(key)
        if job is None:
            logger.debug("job %s is gone", key)
            return PassResult(None, 0, False)
        metadata = job.get("metadata") or {}
        with log_fields(job=key, job_uid=str(metadata.get("uid") or ""), kind="TFJob"):
            namespace = str(metadata.get("namespace") or "")
            served = self.caches.in_scope(namespace)
            if not served:
                if served is False:
                    self._leave_alone(job, namespace)
                return PassResult(None, 0, False)
            observed = self.caches.observe(job)
            result = plan(observed, self.clock(), self.settings)
            writes = 0
            status_written = False
            finishing = _finishes(job, result.status)
            if finishing:
                # The verdict goes first: a controller killed amid the cleanup must leave a finished
                # job behind, never a running one whose PodGroup is gone (its successor would make
                # the PodGroup again).
                status_written = await self.status.write(job, result.status)
                writes += int(status_written)
            try:
                for batch in batches(result.actions):
                    writes += await self._run_batch(job, observed, batch)
            except ActionFailed as failure:
                logger.warning("action failed: %s", failure)
                if failure.event is not None:
                    self.record(job, failure.event)
                await self._report_refusal(job, failure, result.counters)
                # The decision events still describe what the pass saw; the status waits for a
                # pass whose actions all happened.
                self._record_all(job, result.events)
                raise
            if not finishing:
                status_written = await self.status.write(job, result.status)
                writes += int(status_written)
            requeue_after = result.requeue_after
            held = self.status.due_in(str(metadata.get("uid") or ""))
            if held is not None:
                # A counts change is held back: come back when it is due.
                requeue_after = held if requeue_after is None else min(requeue_after, held)
            self._record_all(job, result.events)
            for counter in result.counters:
                self.metrics.count_job(counter, namespace)
            if result.actions or status_written:
                logger.info(
                    "reconciled: %d actions, status %s",
                    len(result.actions),
                    "written" if status_written else "unchanged",
                )
            return PassResult(requeue_after, writes, status_written)

    def _leave_alone(self, job: Mapping[str, Any], namespace: str) -> None:
        """A job outside the scope: nothing is done to it; it is told why once per version."""
        meta = Meta(job)
        if not self.outside_scope.first_time(meta.uid, meta.resource_version):
            return
        event = outside_scope_event(namespace, self.caches.scope)
        logger.warning("left alone: %s", event.message)
        self.record(job, event)

    async def _report_refusal(
        self, job: Mapping[str, Any], failure: ActionFailed, counters: tuple[str, ...]
    ) -> None:
        """A pod, service or PodGroup the API refuses to create (quota, a webhook, an invalid
        template, Volcano's admission of a PodGroup whose queue is missing or closed), or a pod
        admission did not mutate (``controller.admission``, reason ``AdmissionWebhookMissing``):
        the job's Created condition says so, not only this log. Transient failures are not reported;
        the retry with backoff deals with them. The refusal's own write failing changes nothing:
        the pass fails anyway and is retried."""
        action, cause = failure.action, failure.cause
        name = str((job.get("metadata") or {}).get("name") or "")
        if isinstance(cause, NotAdmitted):
            status = unadmitted_pod_status(job.get("status"), name, str(cause), self.clock())
        elif (
            isinstance(action, CreatePod | CreateService | CreatePodGroup)
            and isinstance(cause, ApiError)
            and cause.status in _REFUSALS
        ):
            # A PodGroup refused by the gang scheduler's admission (Volcano's: a missing or closed
            # queue) would otherwise leave the job waiting with no word of why.
            kind = {CreatePod: "pod", CreateService: "service", CreatePodGroup: "PodGroup"}[type(action)]
            what = f"{kind} {action.name}"
            status = refused_creation_status(job.get("status"), name, what, str(cause), self.clock())
        else:
            return
        try:
            written = await self.status.write(job, status)
        except ApiError as error:
            logger.warning("could not report the refusal in the status: %s", error)
            return
        if written and COUNTER_CREATED in counters:  # this write added Created: count the job once
            namespace = str((job.get("metadata") or {}).get("namespace") or "")
            self.metrics.count_job(COUNTER_CREATED, namespace)

    async def _run_batch(self, job: Mapping[str, Any], observed: Observed, batch: tuple[Action, ...]) -> int:
        """Run one batch concurrently; record every outcome; raise the first failure, if any."""
        results = await asyncio.gather(
            *(self.runner.run(observed, action) for action in batch), return_exceptions=True
        )
        writes = 0
        failure: BaseException | None = None
        for outcome in results:
            if isinstance(outcome, Outcome):
                writes += int(outcome.changed)
                if outcome.event is not None:
                    self.record(job, outcome.event)
            elif failure is None:
                failure = outcome
            elif isinstance(outcome, ActionFailed) and outcome.event is not None:
                self.record(job, outcome.event)
        if failure is not None:
            raise failure
        return writes

    def _record_all(self, job: Mapping[str, Any], events: tuple[Event, ...]) -> None:
        for event in events:
            self.record(job, event)
