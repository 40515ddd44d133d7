"""Server-side printing (``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``).

Columns and cell rules are kube-apiserver's printers: the pod STATUS/READY/RESTARTS logic, the
node/service/event columns, CRD ``additionalPrinterColumns`` with their priority, NAME and AGE
for everything else. The server always fills every column; kubectl hides priority > 0 unless
``-o wide``.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Any

from sandbox.apiserver import jsonpath
from sandbox.apiserver.registry import ResourceInfo

JsonObj = dict[str, Any]
Column = tuple[str, str, str, int]  # name, type, format, priority
RowPrinter = Callable[[JsonObj, datetime.datetime], list[Any]]


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


# --- pods ----------------------------------------------------------------------------------------
POD_COLUMNS: list[Column] = [
    ("Name", "string", "name", 0),
    ("Ready", "string", "", 0),
    ("Status", "string", "", 0),
    ("Restarts", "string", "", 0),
    ("Age", "string", "", 0),
    ("IP", "string", "", 1),
    ("Node", "string", "", 1),
    ("Nominated Node", "string", "", 1),
    ("Readiness Gates", "string", "", 1),
]


def _restartable(container: JsonObj | None) -> bool:
    return bool(container) and (container or {}).get("restartPolicy") == "Always"


def _later(current: datetime.datetime | None, candidate: Any) -> datetime.datetime | None:
    moment = parse_time(candidate)
    if moment is None:
        return current
    return moment if current is None or moment > current else current


def pod_row(pod: JsonObj, now: datetime.datetime) -> list[Any]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    conditions = status.get("conditions") or []
    total = len(spec.get("containers") or [])
    ready = restarts = sidecar_restarts = 0
    last_restart: datetime.datetime | None = None
    sidecar_last_restart: datetime.datetime | None = None
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for condition in conditions:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    total += sum(1 for c in init_specs.values() if _restartable(c))
    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for index, container in enumerate(init_statuses):
        restarts += int(container.get("restartCount") or 0)
        last_terminated = (container.get("lastState") or {}).get("terminated")
        if last_terminated:
            last_restart = _later(last_restart, last_terminated.get("finishedAt"))
        sidecar = _restartable(init_specs.get(container.get("name")))
        if sidecar:
            sidecar_restarts += int(container.get("restartCount") or 0)
            if last_terminated:
                sidecar_last_restart = _later(sidecar_last_restart, last_terminated.get("finishedAt"))
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated and int(terminated.get("exitCode") or 0) == 0:
            continue
        if sidecar and container.get("started"):
            if container.get("ready"):
                ready += 1
            continue
        if terminated:
            if not terminated.get("reason"):
                signal = int(terminated.get("signal") or 0)
                reason = (
                    f"Init:Signal:{signal}"
                    if signal
                    else f"Init:ExitCode:{int(terminated.get('exitCode') or 0)}"
                )
            else:
                reason = "Init:" + str(terminated["reason"])
        elif waiting and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = "Init:" + str(waiting["reason"])
        else:
            reason = f"Init:{index}/{len(init_specs)}"
        initializing = True
        break
    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions)
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, sidecar_last_restart
        has_running = False
        for container in reversed(status.get("containerStatuses") or []):
            restarts += int(container.get("restartCount") or 0)
            last_terminated = (container.get("lastState") or {}).get("terminated")
            if last_terminated:
                last_restart = _later(last_restart, last_terminated.get("finishedAt"))
            state = container.get("state") or {}
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if waiting and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif terminated and terminated.get("reason"):
                reason = str(terminated["reason"])
            elif terminated:
                signal = int(terminated.get("signal") or 0)
                reason = f"Signal:{signal}" if signal else f"ExitCode:{int(terminated.get('exitCode') or 0)}"
            elif container.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
            reason = "Running" if pod_ready else "NotReady"
    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        restarts_text = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"
    pod_ips = status.get("podIPs") or []
    pod_ip = (pod_ips[0].get("ip") if pod_ips else "") or "<none>"
    readiness_gates = "<none>"
    gates = spec.get("readinessGates") or []
    if gates:
        true_count = 0
        for gate in gates:
            for condition in conditions:
                if condition.get("type") == gate.get("conditionType"):
                    true_count += condition.get("status") == "True"
                    break
        readiness_gates = f"{true_count}/{len(gates)}"
    return [
        name_of(pod),
        f"{ready}/{total}",
        reason,
        restarts_text,
        age(pod, now),
        pod_ip,
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        readiness_gates,
    ]


# --- other built-ins -----------------------------------------------------------------------------
NODE_COLUMNS: list[Column] = [
    ("Name", "string", "name", 0),
    ("Status", "string", "", 0),
    ("Roles", "string", "", 0),
    ("Age", "string", "", 0),
    ("Version", "string", "", 0),
    ("Internal-IP", "string", "", 1),
    ("External-IP", "string", "", 1),
    ("OS-Image", "string", "", 1),
    ("Kernel-Version", "string", "", 1),
    ("Container-Runtime", "string", "", 1),
]


def node_row(node: JsonObj, now: datetime.datetime) -> list[Any]:
    status = node.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if ready is None:
        state = "Unknown"
    else:
        state = {"True": "Ready", "False": "NotReady"}.get(str(ready.get("status")), "Unknown")
    if (node.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = (node.get("metadata") or {}).get("labels") or {}
    roles = sorted(key.split("/", 1)[1] for key in labels if key.startswith("node-role.kubernetes.io/"))
    addresses = status.get("addresses") or []
    internal = next((a.get("address") for a in addresses if a.get("type") == "InternalIP"), "<none>")
    external = next((a.get("address") for a in addresses if a.get("type") == "ExternalIP"), "<none>")
    info = status.get("nodeInfo") or {}
    return [
        name_of(node),
        state,
        ",".join(r for r in roles if r) or "<none>",
        age(node, now),
        info.get("kubeletVersion", ""),
        internal,
        external,
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


SERVICE_COLUMNS: list[Column] = [
    ("Name", "string", "name", 0),
    ("Type", "string", "", 0),
    ("Cluster-IP", "string", "", 0),
    ("External-IP", "string", "", 0),
    ("Port(s)", "string", "", 0),
    ("Age", "string", "", 0),
    ("Selector", "string", "", 1),
]


def service_row(service: JsonObj, now: datetime.datetime) -> list[Any]:
    spec = service.get("spec") or {}
    ports = []
    for port in spec.get("ports") or []:
        node_port = f":{port['nodePort']}" if port.get("nodePort") else ""
        ports.append(f"{port.get('port')}{node_port}/{port.get('protocol', 'TCP')}")
    selector = spec.get("selector") or {}
    external = ",".join(spec.get("externalIPs") or []) or "<none>"
    return [
        name_of(service),
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP") or "<none>",
        external,
        ",".join(ports) or "<none>",
        age(service, now),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


EVENT_COLUMNS: list[Column] = [
    ("Last Seen", "string", "", 0),
    ("Type", "string", "", 0),
    ("Reason", "string", "", 0),
    ("Object", "string", "", 0),
    ("Subobject", "string", "", 1),
    ("Source", "string", "", 1),
    ("Message", "string", "", 0),
    ("First Seen", "string", "", 1),
    ("Count", "integer", "", 1),
    ("Name", "string", "", 1),
]


def event_row(event: JsonObj, now: datetime.datetime) -> list[Any]:
    first = (
        since(event.get("firstTimestamp"), now)
        if event.get("firstTimestamp")
        else since(event.get("eventTime"), now)
    )
    last = since(event.get("lastTimestamp"), now) if event.get("lastTimestamp") else first
    count = int(event.get("count") or 0)
    series = event.get("series")
    if series:
        last = since(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1
    involved = event.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = event.get("source") or {}
    if source.get("component"):
        origin = str(source["component"]) + (f", {source['host']}" if source.get("host") else "")
    else:
        origin = str(event.get("reportingComponent") or "")
        if event.get("reportingInstance"):
            origin += f", {event['reportingInstance']}"
    return [
        last,
        event.get("type", ""),
        event.get("reason", ""),
        target,
        involved.get("fieldPath", ""),
        origin,
        str(event.get("message", "")).strip(),
        first,
        count,
        name_of(event),
    ]


def _simple(columns: list[Column], cells: Callable[[JsonObj], list[Any]]) -> tuple[list[Column], RowPrinter]:
    full = [("Name", "string", "name", 0), *columns]
    age_index = next((i for i, c in enumerate(full) if c[0] == "Age"), None)

    def row(obj: JsonObj, now: datetime.datetime) -> list[Any]:
        values = [name_of(obj), *cells(obj)]
        if age_index is not None:
            values[age_index] = age(obj, now)
        return values

    return full, row


_AGE: Column = ("Age", "string", "", 0)

BUILTIN_PRINTERS: dict[tuple[str, str], tuple[list[Column], RowPrinter]] = {
    ("", "pods"): (POD_COLUMNS, pod_row),
    ("", "nodes"): (NODE_COLUMNS, node_row),
    ("", "services"): (SERVICE_COLUMNS, service_row),
    ("", "events"): (EVENT_COLUMNS, event_row),
    ("", "namespaces"): _simple(
        [("Status", "string", "", 0), _AGE], lambda o: [(o.get("status") or {}).get("phase", ""), None]
    ),
    ("", "configmaps"): _simple(
        [("Data", "integer", "", 0), _AGE],
        lambda o: [len(o.get("data") or {}) + len(o.get("binaryData") or {}), None],
    ),
    ("", "secrets"): _simple(
        [("Type", "string", "", 0), ("Data", "integer", "", 0), _AGE],
        lambda o: [o.get("type", ""), len(o.get("data") or {}), None],
    ),
    ("", "serviceaccounts"): _simple(
        [("Secrets", "integer", "", 0), _AGE], lambda o: [len(o.get("secrets") or []), None]
    ),
    ("coordination.k8s.io", "leases"): _simple(
        [("Holder", "string", "", 0), _AGE], lambda o: [(o.get("spec") or {}).get("holderIdentity", ""), None]
    ),
    ("scheduling.k8s.io", "priorityclasses"): _simple(
        [
            ("Value", "integer", "", 0),
            ("Global-Default", "boolean", "", 0),
            _AGE,
            ("PreemptionPolicy", "string", "", 0),
        ],
        lambda o: [o.get("value", 0), bool(o.get("globalDefault")), None, o.get("preemptionPolicy", "")],
    ),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): _simple(
        [("Webhooks", "integer", "", 0), _AGE], lambda o: [len(o.get("webhooks") or []), None]
    ),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): _simple(
        [("Webhooks", "integer", "", 0), _AGE], lambda o: [len(o.get("webhooks") or []), None]
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"): _simple(
        [("Created At", "date", "", 0)], lambda o: [(o.get("metadata") or {}).get("creationTimestamp")]
    ),
    ("apps", "deployments"): _simple(
        [("Ready", "string", "", 0), ("Up-to-date", "integer", "", 0), ("Available", "integer", "", 0), _AGE],
        lambda o: [
            f"{(o.get('status') or {}).get('readyReplicas', 0)}/{(o.get('spec') or {}).get('replicas', 0)}",
            (o.get("status") or {}).get("updatedReplicas", 0),
            (o.get("status") or {}).get("availableReplicas", 0),
            None,
        ],
    ),
}

DEFAULT_PRINTER: tuple[list[Column], RowPrinter] = _simple([_AGE], lambda o: [None])


# --- custom resources ----------------------------------------------------------------------------
def _custom_cell(column: JsonObj, obj: JsonObj, now: datetime.datetime) -> Any:
    try:
        values = jsonpath.find(obj, str(column.get("jsonPath", "")))
    except (ValueError, TypeError):
        return None
    if not values:
        return None
    if len(values) > 1:
        return " ".join(v if isinstance(v, str) else json.dumps(v) for v in values)
    value = values[0]
    kind = column.get("type")
    if kind == "date":
        return since(value, now)
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    if kind == "string" and not isinstance(value, str):
        return json.dumps(value)
    return value


def custom_printer(info: ResourceInfo) -> tuple[list[Column], RowPrinter]:
    columns_spec = list(info.custom.printer_columns) if info.custom else []
    if not columns_spec:
        columns_spec = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    columns: list[Column] = [("Name", "string", "name", 0)]
    columns += [
        (
            str(c.get("name", "")),
            str(c.get("type", "string")),
            str(c.get("format", "")),
            int(c.get("priority", 0)),
        )
        for c in columns_spec
    ]

    def row(obj: JsonObj, now: datetime.datetime) -> list[Any]:
        return [name_of(obj), *(_custom_cell(c, obj, now) for c in columns_spec)]

    return columns, row


def printer_for(info: ResourceInfo) -> tuple[list[Column], RowPrinter]:
    if info.is_custom:
        return custom_printer(info)
    key = (info.storage_key.group, info.storage_key.resource)
    return BUILTIN_PRINTERS.get(key, DEFAULT_PRINTER)


def column_definitions(columns: list[Column]) -> list[JsonObj]:
    return [
        {"name": name, "type": kind, "format": fmt, "description": "", "priority": priority}
        for name, kind, fmt, priority in columns
    ]


def row_object(obj: JsonObj, include: str) -> JsonObj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def build_table(
    info: ResourceInfo,
    objects: list[JsonObj],
    list_meta: JsonObj,
    include: str,
    now: datetime.datetime,
    with_columns: bool = True,
) -> JsonObj:
    columns, printer = printer_for(info)
    rows = []
    for obj in objects:
        row: JsonObj = {"cells": printer(obj, now)}
        embedded = row_object(obj, include)
        if embedded is not None:
            row["object"] = embedded
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": column_definitions(columns) if with_columns else [],
        "rows": rows,
    }
