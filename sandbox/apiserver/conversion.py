"""events.k8s.io/v1 Events are stored as core/v1 Events; these two functions map between the shapes."""

from __future__ import annotations

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


def event_to_core(event: JsonObj) -> JsonObj:
    core: JsonObj = {"apiVersion": "v1", "kind": "Event"}
    for name in _SHARED:
        if name in event:
            core[name] = event[name]
    for new, old in _RENAMES.items():
        if new in event:
            core[old] = event[new]
    core.setdefault("involvedObject", {})
    return core


def event_from_core(core: JsonObj) -> JsonObj:
    event: JsonObj = {"apiVersion": "events.k8s.io/v1", "kind": "Event"}
    for name in _SHARED:
        if name in core:
            event[name] = core[name]
    for new, old in _RENAMES.items():
        if old in core and core[old] not in (None, "", {}):
            event[new] = core[old]
    event.setdefault("eventTime", None)
    return event


def is_events_v1(group: str, resource: str) -> bool:
    return group == "events.k8s.io" and resource == "events"


def to_storage(group: str, resource: str, obj: JsonObj) -> JsonObj:
    return event_to_core(obj) if is_events_v1(group, resource) else obj


def from_storage(group: str, resource: str, obj: JsonObj) -> JsonObj:
    return event_from_core(obj) if is_events_v1(group, resource) else obj
