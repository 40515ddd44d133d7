"""The kubelet's crash-loop back-off, as a pure value per container.

A container that dies for the first time restarts at once. After that, the next restart waits the
current delay counted from when the container finished: 10 s, then 20 s, 40 s, ... capped at 5 min.
A container that ran longer than twice the cap (10 min) before dying starts over as if fresh.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackoffPolicy:
    initial: float = 10.0
    maximum: float = 300.0
    resync: float = 60.0
    """The kubelet's pod resync period: a container waiting out a longer back-off is seen (and
    shown as CrashLoopBackOff) this long after its crash, a shorter one only when it ends."""

    @classmethod
    def scaled(cls, initial: float) -> BackoffPolicy:
        """A policy with kubelet's proportions (cap = 30 x initial, resync = 6 x initial) for a
        shorter or longer base."""
        if initial <= 0:
            raise ValueError(f"the back-off base must be positive, not {initial}")
        return cls(initial, initial * 30, initial * 6)

    @property
    def reset_after(self) -> float:
        return 2 * self.maximum


@dataclass(frozen=True)
class BackoffEntry:
    delay: float
    last_restart: float
    """Monotonic time of the restart that set ``delay``."""


def restart_delay(entry: BackoffEntry | None, finished_at: float, policy: BackoffPolicy) -> float:
    """Seconds after ``finished_at`` before the container may start again."""
    if entry is None or finished_at - entry.last_restart > policy.reset_after:
        return 0.0
    return entry.delay


def after_restart(entry: BackoffEntry | None, now: float, policy: BackoffPolicy) -> BackoffEntry:
    """The entry once the container is restarted at ``now``."""
    if entry is None or now - entry.last_restart > policy.reset_after:
        return BackoffEntry(policy.initial, now)
    return BackoffEntry(min(entry.delay * 2, policy.maximum), now)
