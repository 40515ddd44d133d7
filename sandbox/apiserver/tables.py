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

from kubeobjects.meta import Meta
from kubeobjects.times import age, since
from sandbox.apiserver import conversion, jsonpath
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.podtable import NAME, POD_COLUMNS, Column, pod_row, shown, wide
from sandbox.apiserver.registry import ResourceInfo

RowPrinter = Callable[[JsonObj, datetime.datetime], list[Any]]

# --- other built-ins -----------------------------------------------------------------------------
NODE_COLUMNS: list[Column] = [
    NAME,
    *shown("Status", "Roles", "Age", "Version"),
    *wide("Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"),
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
        Meta(node).name,
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
    NAME,
    *shown("Type", "Cluster-IP", "External-IP", "Port(s)", "Age"),
    *wide("Selector"),
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
        Meta(service).name,
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP") or "<none>",
        external,
        ",".join(ports) or "<none>",
        age(service, now),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


EVENT_COLUMNS: list[Column] = [
    *shown("Last Seen", "Type", "Reason", "Object"),
    *wide("Subobject", "Source"),
    *shown("Message"),
    *wide("First Seen"),
    Column("Count", "integer", priority=1),
    *wide("Name"),
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
        Meta(event).name,
    ]


def _simple(columns: list[Column], cells: Callable[[JsonObj], list[Any]]) -> tuple[list[Column], RowPrinter]:
    full = [NAME, *columns]
    age_index = next((i for i, c in enumerate(full) if c[0] == "Age"), None)

    def row(obj: JsonObj, now: datetime.datetime) -> list[Any]:
        values = [Meta(obj).name, *cells(obj)]
        if age_index is not None:
            values[age_index] = age(obj, now)
        return values

    return full, row


_AGE = Column("Age")
_WEBHOOKS = _simple([Column("Webhooks", "integer"), _AGE], lambda o: [len(o.get("webhooks") or []), None])

BUILTIN_PRINTERS: dict[tuple[str, str], tuple[list[Column], RowPrinter]] = {
    ("", "pods"): (POD_COLUMNS, pod_row),
    ("", "nodes"): (NODE_COLUMNS, node_row),
    ("", "services"): (SERVICE_COLUMNS, service_row),
    ("", "events"): (EVENT_COLUMNS, event_row),
    ("", "namespaces"): _simple(
        [Column("Status"), _AGE], lambda o: [(o.get("status") or {}).get("phase", ""), None]
    ),
    ("", "configmaps"): _simple(
        [Column("Data", "integer"), _AGE],
        lambda o: [len(o.get("data") or {}) + len(o.get("binaryData") or {}), None],
    ),
    ("", "secrets"): _simple(
        [Column("Type"), Column("Data", "integer"), _AGE],
        lambda o: [o.get("type", ""), len(o.get("data") or {}), None],
    ),
    ("", "serviceaccounts"): _simple(
        [Column("Secrets", "integer"), _AGE], lambda o: [len(o.get("secrets") or []), None]
    ),
    ("coordination.k8s.io", "leases"): _simple(
        [Column("Holder"), _AGE], lambda o: [(o.get("spec") or {}).get("holderIdentity", ""), None]
    ),
    ("scheduling.k8s.io", "priorityclasses"): _simple(
        [
            Column("Value", "integer"),
            Column("Global-Default", "boolean"),
            _AGE,
            Column("PreemptionPolicy"),
        ],
        lambda o: [o.get("value", 0), bool(o.get("globalDefault")), None, o.get("preemptionPolicy", "")],
    ),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): _WEBHOOKS,
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): _WEBHOOKS,
    ("apiextensions.k8s.io", "customresourcedefinitions"): _simple(
        [Column("Created At", "date")], lambda o: [(o.get("metadata") or {}).get("creationTimestamp")]
    ),
    ("apps", "deployments"): _simple(
        [Column("Ready"), Column("Up-to-date", "integer"), Column("Available", "integer"), _AGE],
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
    columns: list[Column] = [NAME]
    columns += [
        Column(
            str(c.get("name", "")),
            str(c.get("type", "string")),
            str(c.get("format", "")),
            int(c.get("priority", 0)),
        )
        for c in columns_spec
    ]

    def row(obj: JsonObj, now: datetime.datetime) -> list[Any]:
        return [Meta(obj).name, *(_custom_cell(c, obj, now) for c in columns_spec)]

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
    """A Table of ``objects`` as served to the client; cells come from the stored shape (so
    events.k8s.io Events print with the core Event printer, as kube-apiserver does)."""
    columns, printer = printer_for(info)
    rows = []
    for obj in objects:
        row: JsonObj = {"cells": printer(conversion.to_storage(info.group, info.resource, obj), now)}
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
