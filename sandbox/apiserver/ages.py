"""Times as kubectl prints them: ``duration.HumanDuration`` and the AGE of objects."""

from __future__ import annotations

import datetime
from typing import Any

JsonObj = dict[str, Any]


def parse_time(value: Any) -> datetime.datetime | None:
    if not value or not isinstance(value, str):
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def human_duration(seconds_float: float) -> str:
    """k8s.io/apimachinery duration.HumanDuration."""
    seconds = int(seconds_float)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def since(value: Any, now: datetime.datetime) -> str:
    moment = parse_time(value)
    if moment is None:
        return "<unknown>"
    return human_duration((now - moment).total_seconds())


def age(obj: JsonObj, now: datetime.datetime) -> str:
    return since((obj.get("metadata") or {}).get("creationTimestamp"), now)


def name_of(obj: JsonObj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))
