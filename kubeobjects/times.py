"""Time as Kubernetes writes and prints it: RFC 3339 timestamps, Go durations, kubectl's ages."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubeobjects.meta import Meta


def format_time(moment: datetime) -> str:
    """``2026-11-29T10:41:00Z``: the form Kubernetes uses for ``metav1.Time``."""
    if moment.tzinfo is None:
        raise ValueError(f"time must be timezone-aware, got naive {moment.isoformat()}")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(moment: datetime) -> str:
    """``2026-11-29T10:41:00.123456Z``: ``metav1.MicroTime`` (Leases, events.k8s.io)."""
    if moment.tzinfo is None:
        raise ValueError(f"time must be timezone-aware, got naive {moment.isoformat()}")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: object) -> datetime | None:
    """The moment a stored timestamp names, in UTC, or None when it is absent or not a timestamp.

    A malformed timestamp in a stored object is treated as absent rather than crashing a loop that
    reads it: the reader then behaves as if the field had never been written.
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


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String``: ``10s``, ``1m20s``, ``5m0s``, ``200ms``."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    whole = round(seconds, 3)
    minutes, rest = divmod(whole, 60)
    hours, minutes = divmod(int(minutes), 60)
    rest_text = f"{rest:.3f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{rest_text}"
    if minutes:
        return f"{minutes}m{rest_text}"
    return rest_text


def human_duration(seconds_float: float) -> str:
    """apimachinery's ``duration.HumanDuration``, the form of kubectl's AGE column."""
    seconds = int(seconds_float)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes, hours = seconds // 60, seconds // 3600
    days, years = hours // 24, hours // 24 // 365
    if minutes < 10:
        return _units(minutes, "m", seconds % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return _units(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return _units(days, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return _units(years, "y", days % 365, "d")
    return f"{years}y"


def _units(major: int, major_unit: str, minor: int, minor_unit: str) -> str:
    # HumanDuration drops a zero second unit: "3m", not "3m0s".
    return f"{major}{major_unit}{minor}{minor_unit}" if minor else f"{major}{major_unit}"


def since(value: object, now: datetime) -> str:
    """How long ago the timestamp ``value`` was, as kubectl prints it; ``<unknown>`` without one."""
    moment = parse_time(value)
    if moment is None:
        return "<unknown>"
    return human_duration((now - moment).total_seconds())


def age(obj: Mapping[str, Any], now: datetime) -> str:
    """kubectl's AGE of ``obj``."""
    return since(Meta(obj).raw.get("creationTimestamp"), now)
