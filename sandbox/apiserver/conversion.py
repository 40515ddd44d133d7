"""events.k8s.io/v1 Events are stored as core/v1 Events; these two functions map between the shapes."""

from __future__ import annotations

from collections.abc import Iterable

from sandbox.apiserver.jsonobj import JsonObj

# events.k8s.io/v1 field -> core/v1 field
_RENAMES = {
    "note": "message",
    "regarding": "involvedObject",
    "related": "related",
    "reportingController": "reportingComponent",
    "reportingInstance": "reportingInstance",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_SHARED = ("metadata", "eventTime", "series", "action", "reason", "type")


def _convert(
    source: JsonObj, api_version: str, renames: Iterable[tuple[str, str]], skip_empty: bool
) -> JsonObj:
    converted: JsonObj = {"apiVersion": api_version, "kind": "Event"}
    converted.update((name, source[name]) for name in _SHARED if name in source)
    for theirs, ours in renames:
        if theirs in source and not (skip_empty and source[theirs] in (None, "", {})):
            converted[ours] = source[theirs]
    return converted


def event_to_core(event: JsonObj) -> JsonObj:
    core = _convert(event, "v1", _RENAMES.items(), skip_empty=False)
    core.setdefault("involvedObject", {})
    return core


def event_from_core(core: JsonObj) -> JsonObj:
    # core/v1 writers leave the fields events.k8s.io/v1 has no use for empty: they are not carried over
    event = _convert(core, "events.k8s.io/v1", [(old, new) for new, old in _RENAMES.items()], skip_empty=True)
    event.setdefault("eventTime", None)
    return event


def is_events_v1(group: str, resource: str) -> bool:
    return group == "events.k8s.io" and resource == "events"


def to_storage(group: str, resource: str, obj: JsonObj) -> JsonObj:
    return event_to_core(obj) if is_events_v1(group, resource) else obj


def from_storage(group: str, resource: str, obj: JsonObj) -> JsonObj:
    return event_from_core(obj) if is_events_v1(group, resource) else obj
