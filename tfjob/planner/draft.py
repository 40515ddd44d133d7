"""The plan of one reconcile pass while it is being put together, and the finished ``Plan``."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import datetime

from kubeobjects.jsonvalues import copy_json
from kubeobjects.times import format_time
from tfjob.planner.actions import Action, Event
from tfjob.planner.conditions import new_condition, set_condition, with_message, with_reason
from tfjob.wire import JobCondition, JobStatus

COUNTER_CREATED = "jobs_created"
COUNTER_SUCCESSFUL = "jobs_successful"
COUNTER_FAILED = "jobs_failed"
COUNTER_RESTARTED = "jobs_restarted"
COUNTER_DELETED = "jobs_deleted"
# A pod that reached phase Failed and is deleted to be recreated (upstream's failed_pods_total).
COUNTER_FAILED_PODS = "failed_pods"


@dataclass(frozen=True)
class Plan:
    """The outcome of one pass: carry out ``actions`` in order, write ``status`` if it changed."""

    status: JobStatus  # the complete new status (the controller writes it only if != old)
    actions: tuple[Action, ...]
    events: tuple[Event, ...]
    requeue_after: float | None  # seconds until the planner must run again; None = no timer
    counters: tuple[str, ...]  # metric increments, e.g. "jobs_created"


@dataclass
class Draft:
    """A mutable accumulator the planner's steps add to; ``finish`` freezes it into a Plan."""

    status: JobStatus
    now: datetime
    actions: list[Action] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    counters: list[str] = field(default_factory=list)
    timers: list[float] = field(default_factory=list)

    @classmethod
    def starting_from(cls, status: JobStatus | None, now: datetime) -> Draft:
        base: JobStatus = copy_json(status) if isinstance(status, dict) else JobStatus()
        return cls(status=base, now=now)

    @functools.cached_property
    def timestamp(self) -> str:
        # Asked for by every condition and time the pass sets: formatted once.
        return format_time(self.now)

    @property
    def conditions(self) -> list[JobCondition]:
        found = self.status.get("conditions")
        return list(found) if isinstance(found, list) else []

    def set_condition(self, type_: str, status: str, reason: str, message: str) -> None:
        update = new_condition(type_, status, reason, message, self.timestamp)
        self.status["conditions"] = set_condition(self.conditions, update)

    def set_message(self, type_: str, message: str) -> bool:
        """Replace the message of the ``type_`` condition; True when it changed."""
        before = self.conditions
        after = with_message(before, type_, message, self.timestamp)
        if after == before:
            return False
        self.status["conditions"] = after
        return True

    def set_reason(self, type_: str, reason: str, message: str) -> bool:
        """Replace the reason and message of the ``type_`` condition in place; True when changed."""
        before = self.conditions
        after = with_reason(before, type_, reason, message, self.timestamp)
        if after == before:
            return False
        self.status["conditions"] = after
        return True

    def act(self, action: Action) -> None:
        self.actions.append(action)

    def emit(self, type_: str, reason: str, message: str) -> None:
        event = Event(type_, reason, message)
        if event not in self.events:  # one of each per pass; the recorder aggregates across passes
            self.events.append(event)

    def count(self, counter: str) -> None:
        self.counters.append(counter)

    def requeue_in(self, seconds: float) -> None:
        self.timers.append(max(seconds, 0.0))

    def finish(self) -> Plan:
        return Plan(
            status=self.status,
            actions=tuple(self.actions),
            events=tuple(self.events),
            requeue_after=min(self.timers) if self.timers else None,
            counters=tuple(self.counters),
        )
