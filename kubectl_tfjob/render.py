"""Printing the plugin's views: ``-o yaml``/``-o json`` as data, the default as text for people."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from kubectl_tfjob.explain import Explanation
from kubectl_tfjob.status import Countdown, GangView, JobStatusView

OUTPUT_FORMATS = ("text", "yaml", "json")


def as_data(view: Mapping[str, Any], output: str) -> str:
    if output == "json":
        return json.dumps(view, indent=2, ensure_ascii=False) + "\n"
    return str(yaml.safe_dump(dict(view), sort_keys=False, allow_unicode=True, default_flow_style=False))


def _pairs(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in values.items()) or "<none>"


def _indent(text: str, prefix: str = "  ") -> str:
    return "".join(prefix + line for line in text.splitlines(keepends=True))


def explain_text(view: Explanation) -> str:
    lines = [f"TFJob {view['namespace']}/{view['name']}: {'valid' if view['valid'] else 'INVALID'}"]
    if view["errors"]:
        lines.append("Validation errors:")
        lines += [f"  {error}" for error in view["errors"]]
    lines += [f"Note: {note}" for note in view["notes"]]
    if not view["valid"]:
        return "\n".join(lines) + "\n"
    lines.append("Defaulted spec:")
    lines.append(_indent(yaml.safe_dump(view["spec"], sort_keys=False)).rstrip("\n"))
    podgroup = view.get("podGroup")
    if podgroup is not None:
        spec: Any = podgroup.get("spec") or {}
        lines.append(
            f"PodGroup {(podgroup.get('metadata') or {}).get('name', '')} ({podgroup.get('apiVersion')}):"
        )
        lines.append(f"  minMember: {spec.get('minMember')}")
        if "minTaskMember" in spec:
            lines.append(f"  minTaskMember: {_pairs(spec['minTaskMember'])}")
        if "networkTopology" in spec:
            lines.append(f"  networkTopology: {_pairs(spec['networkTopology'])}")
        if "queue" in spec:
            lines.append(f"  queue: {spec.get('queue')}")
        lines.append(f"  minResources: {_pairs(spec.get('minResources') or {})}")
    else:
        lines.append("PodGroup: none (gang scheduling is off)")
    lines.append(f"Pods ({len(view['pods'])}):")
    for pod in view["pods"]:
        lines.append(f"  {pod['name']}:")
        lines.append(f"    labels: {_pairs(pod['labels'])}")
        lines.append(f"    annotations: {_pairs(pod['annotations'])}")
        lines.append(f"    schedulerName: {pod['schedulerName']}")
        lines.append(f"    restartPolicy: {pod['restartPolicy']}")
        lines.append(
            f"    TF_CONFIG: {pod['tfConfig'] if pod['tfConfig'] is not None else '<not set: one replica>'}"
        )
        lines += [f"    warning: {warning}" for warning in pod["warnings"]]
    lines.append(f"Services ({len(view['services'])}):")
    for service in view["services"]:
        ports = ", ".join(
            f"{port.get('name', '')}:{port.get('port')}".lstrip(":")
            for port in service["spec"].get("ports") or ()
        )
        lines.append(f"  {service['metadata']['name']}: headless, ports {ports or '<none>'}")
    if view["events"]:
        lines.append("Events:")
        lines += [f"  {e['type']} {e['reason']}: {e['message']}" for e in view["events"]]
    return "\n".join(lines) + "\n"


def _countdown_text(countdown: Countdown) -> str:
    remaining = countdown["remaining"]
    left = f"{remaining}s left" if remaining > 0 else "due now"
    return f"{countdown['seconds']}s, at {countdown['at']} ({left})"


def _joined(*parts: object) -> str:
    """Words with the empty ones left out, so a missing reason or time leaves no stray space."""
    return " ".join(str(part) for part in parts if part not in (None, ""))


def _with_message(head: str, message: object) -> str:
    # A condition or event without a message ends at its reason, never at a colon.
    return f"{head}: {message}" if message else head


def _condition_text(condition: Mapping[str, Any], *, with_time: bool) -> str:
    when = condition.get("lastTransitionTime") if with_time else None
    head = _joined(
        f"{condition.get('type')}={condition.get('status')}",
        condition.get("reason"),
        f"({when})" if when else None,
    )
    return _with_message(head, condition.get("message"))


def _state_line(view: JobStatusView) -> str:
    state = view["state"] or "no condition yet (the controller has not written the job's status)"
    return f"TFJob {view['namespace']}/{view['name']}: {state}"


def _replica_lines(view: JobStatusView) -> list[str]:
    statuses = view["replicaStatuses"]
    desired = view.get("desiredReplicas") or {}
    lines = []
    for rtype in [*desired, *(rtype for rtype in statuses if rtype not in desired)]:
        wanted = f"{desired[rtype]} wanted" if rtype in desired else "not in the spec"
        counts = statuses.get(rtype)
        if not isinstance(counts, dict):
            lines.append(f"  {rtype}: {wanted}; not counted yet")
            continue
        # The controller leaves zero counts out (upstream's omitempty): {} is 0 active, 0 done.
        numbers = ", ".join(f"{key} {counts.get(key) or 0}" for key in ("active", "succeeded", "failed"))
        lines.append(f"  {rtype}: {wanted}; {numbers}")
    return lines or ["  none in the spec"]


def _restarts_line(view: JobStatusView) -> str:
    restarts = view["restarts"]
    limit = restarts["backoffLimit"]
    # Upstream semantics: backoffLimit is checked only when set; unset means no limit.
    limit_text = f"backoffLimit {limit}" if limit is not None else "no backoffLimit set"
    disruptions = f", disruptions {restarts['disruptions']}" if "disruptions" in restarts else ""
    if "completionTime" in view:
        # The pods that carried the in-place restarts may be gone: the count means nothing now.
        return f"Restarts: no longer counted, the job has finished ({limit_text}){disruptions}"
    if limit is None:
        return f"Restarts: {restarts['counted']} (no backoffLimit set: restarts are not limited){disruptions}"
    return f"Restarts: {restarts['counted']} of backoffLimit {limit}{disruptions}"


ABSENCE_TEXT = {
    "NotCreatedYet": "not created yet (the controller creates it before any pod)",
    "DeletedWhenFinished": "deleted when the job finished",
    "DeletedWhileSuspended": "deleted while the job is suspended (created again on resume)",
}


def _gang_lines(gang: GangView) -> list[str]:
    if not gang["exists"]:
        absence = ABSENCE_TEXT.get(gang.get("absence") or "NotCreatedYet", "not there")
        return [f"PodGroup {gang['podGroup']}: {absence}"]
    details = [f"phase {gang['phase']}" if gang["phase"] else "no phase yet"]
    if "minMember" in gang:
        details.append(f"minMember {gang['minMember']}")
    if "minTaskMember" in gang:
        details.append(f"minTaskMember {{{_pairs(gang['minTaskMember'])}}}")
    if "networkTopology" in gang:
        details.append(f"networkTopology {{{_pairs(gang['networkTopology'])}}}")
    if "running" in gang:
        details.append(f"running {gang['running']}")
    if "queue" in gang:
        details.append(f"queue {gang['queue']}")
    admitted = "admitted" if gang["admitted"] else "waiting for the gang scheduler"
    lines = [f"PodGroup {gang['podGroup']}: {', '.join(details)} ({admitted})"]
    lines += [f"  {_condition_text(condition, with_time=False)}" for condition in gang["conditions"]]
    timeout = gang.get("scheduleTimeout")
    if timeout is not None:
        lines.append(f"  schedule timeout: {_countdown_text(timeout)}")
    return lines


def status_text(view: JobStatusView) -> str:
    lines = [_state_line(view)]
    if "startTime" in view:
        lines.append(f"Started: {view['startTime']}")
    if "completionTime" in view:
        lines.append(f"Completed: {view['completionTime']}")
    lines.append("Conditions:")
    lines += [f"  {_condition_text(condition, with_time=True)}" for condition in view["conditions"]]
    if not view["conditions"]:
        lines.append("  none yet")
    lines.append("Replicas:")
    lines += _replica_lines(view)
    lines.append(_restarts_line(view))
    deadline = view.get("activeDeadline")
    if deadline is not None:
        lines.append(f"Active deadline: {_countdown_text(deadline)}")
    gang = view.get("gang")
    if gang is not None:
        lines += _gang_lines(gang)
    lines.append("Pods:")
    if not view["pods"]:
        lines.append("  none")
    for pod in view["pods"]:
        lines.append(
            f"  {pod['name']}: {pod['phase']}, restarts {pod['restarts']}, "
            f"node {pod['node'] or '(not scheduled)'}"
        )
    if view["events"]:
        lines.append("Events:")
        for event in view["events"]:
            count = f"(x{event['count']})"
            head = _joined(event["lastTimestamp"], event["type"], event["reason"], event["object"], count)
            lines.append(f"  {_with_message(head, event['message'])}")
    return "\n".join(lines) + "\n"
