"""Printing the plugin's views: ``-o yaml``/``-o json`` as data, the default as text for people."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from kubectl_tfjob.explain import Explanation
from kubectl_tfjob.status import Countdown, JobStatusView

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


def status_text(view: JobStatusView) -> str:
    lines = [f"TFJob {view['namespace']}/{view['name']}: {view['state'] or '<no condition yet>'}"]
    lines.append("Conditions:")
    for condition in view["conditions"] or [{}]:
        if not condition:
            lines.append("  <none>")
            continue
        lines.append(
            f"  {condition.get('type')}={condition.get('status')} {condition.get('reason', '')}"
            f" ({condition.get('lastTransitionTime', '')}): {condition.get('message', '')}"
        )
    lines.append("Replicas:")
    for rtype, counts in view["replicaStatuses"].items() or [("<none yet>", {})]:
        lines.append(f"  {rtype}: {_pairs(counts) if isinstance(counts, dict) else counts}")
    restarts = view["restarts"]
    limit = restarts["backoffLimit"]
    disruptions = f", disruptions {restarts['disruptions']}" if "disruptions" in restarts else ""
    lines.append(
        f"Restarts: {restarts['counted']} of backoffLimit {limit if limit is not None else '<none>'}"
        f"{disruptions}"
    )
    deadline = view.get("activeDeadline")
    if deadline is not None:
        lines.append(f"Active deadline: {_countdown_text(deadline)}")
    gang = view.get("gang")
    if gang is not None:
        if not gang["exists"]:
            lines.append(f"PodGroup {gang['podGroup']}: not created yet")
        else:
            details = [f"phase {gang['phase'] or '<none>'}"]
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
            lines.append(f"PodGroup {gang['podGroup']}: {', '.join(details)} ({admitted})")
        for condition in gang["conditions"]:
            lines.append(
                f"  {condition.get('type')}={condition.get('status')} {condition.get('reason', '')}: "
                f"{condition.get('message', '')}"
            )
        timeout = gang.get("scheduleTimeout")
        if timeout is not None:
            lines.append(f"  schedule timeout: {_countdown_text(timeout)}")
    lines.append("Pods:")
    if not view["pods"]:
        lines.append("  <none>")
    for pod in view["pods"]:
        lines.append(
            f"  {pod['name']}: {pod['phase']}, restarts {pod['restarts']}, node {pod['node'] or '<none>'}"
        )
    if view["events"]:
        lines.append("Events:")
        for event in view["events"]:
            lines.append(
                f"  {event['lastTimestamp']} {event['type']} {event['reason']} {event['object']}"
                f" (x{event['count']}): {event['message']}"
            )
    return "\n".join(lines) + "\n"
