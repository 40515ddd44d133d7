"""RFC 3339 timestamps as the API server writes them in status: UTC, whole seconds, ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime


def format_time(moment: datetime) -> str:
    """``2026-11-29T10:41:00Z``: the form Kubernetes uses for ``metav1.Time``."""
    if moment.tzinfo is None:
        raise ValueError(f"time must be timezone-aware, got naive {moment.isoformat()}")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> datetime | None:
    """The moment a stored timestamp names, or None when it is absent or not a timestamp.

    A malformed timestamp in a stored object is treated as absent rather than crashing the
    reconcile loop: the planner then behaves as if the field had never been written.
    """
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
