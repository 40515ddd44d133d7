"""Shape checks for built-in kinds before the server touches them.

kube-apiserver decodes a body into its Go type first; a field of the wrong JSON type fails there
with a 400 (``Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal ...``). The
sandbox keeps objects as dicts, so it checks the shapes of the fields its defaulting, validation
and printers read, and answers the same way instead of failing inside them.
"""

from __future__ import annotations

from typing import Any

from sandbox.apiserver import errors
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.registry import ResourceInfo

# A shape: "string", "bool", "int", "any", ("map", value shape), ("array", item shape) or
# ("object", {field: shape}).
Shape = Any

STRING_MAP: Shape = ("map", "string")
OBJECTS: Shape = ("array", ("object", {}))
CONTAINER: Shape = (
    "object",
    {
        "name": "string",
        "image": "string",
        "env": OBJECTS,
        "ports": OBJECTS,
        "volumeMounts": OBJECTS,
        "command": ("array", "string"),
        "args": ("array", "string"),
        "resources": ("object", {"limits": ("map", "any"), "requests": ("map", "any")}),
    },
)
OWNER_REFERENCES: Shape = ("array", ("object", {"uid": "string", "name": "string"}))
METADATA: Shape = (
    "object",
    {
        "name": "string",
        "generateName": "string",
        "namespace": "string",
        "labels": STRING_MAP,
        "annotations": STRING_MAP,
        "finalizers": ("array", "string"),
        "ownerReferences": OWNER_REFERENCES,
    },
)
CONDITIONS: Shape = ("array", ("object", {"type": "string", "status": "string"}))
POD_SPEC: Shape = (
    "object",
    {
        "containers": ("array", CONTAINER),
        "initContainers": ("array", CONTAINER),
        "volumes": OBJECTS,
        "tolerations": OBJECTS,
        "nodeName": "string",
        "schedulerName": "string",
        "readinessGates": OBJECTS,
    },
)
CONTAINER_STATUSES: Shape = ("array", ("object", {"state": ("object", {}), "lastState": ("object", {})}))
KIND_SHAPES: dict[tuple[str, str], dict[str, Shape]] = {
    ("", "pods"): {
        "spec": POD_SPEC,
        "status": (
            "object",
            {
                "conditions": CONDITIONS,
                "containerStatuses": CONTAINER_STATUSES,
                "initContainerStatuses": CONTAINER_STATUSES,
                "podIPs": OBJECTS,
            },
        ),
    },
    ("", "services"): {"spec": ("object", {"ports": OBJECTS, "selector": STRING_MAP})},
    ("", "nodes"): {
        "spec": ("object", {}),
        "status": ("object", {"conditions": CONDITIONS, "addresses": OBJECTS}),
    },
    ("", "namespaces"): {"spec": ("object", {"finalizers": ("array", "string")})},
    ("", "events"): {"involvedObject": ("object", {}), "source": ("object", {})},
    ("", "configmaps"): {"data": STRING_MAP},
    ("", "secrets"): {"data": STRING_MAP, "stringData": STRING_MAP},
    ("apps", "deployments"): {"spec": ("object", {"template": ("object", {"spec": POD_SPEC})})},
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): {
        "webhooks": (
            "array",
            ("object", {"rules": OBJECTS, "clientConfig": ("object", {"service": ("object", {})})}),
        )
    },
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): {
        "webhooks": (
            "array",
            ("object", {"rules": OBJECTS, "clientConfig": ("object", {"service": ("object", {})})}),
        )
    },
    ("apiextensions.k8s.io", "customresourcedefinitions"): {
        "spec": (
            "object",
            {
                "group": "string",
                "names": ("object", {"plural": "string", "kind": "string"}),
                "versions": ("array", ("object", {"name": "string"})),
            },
        )
    },
}
_PYTHON_TYPES = {"string": str, "bool": bool, "map": dict, "object": dict, "array": list}
_GO_NAMES = {
    "string": "string",
    "bool": "bool",
    "int": "int64",
    "map": "map",
    "object": "struct",
    "array": "slice",
}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _mismatch(shape: Shape, value: Any) -> str | None:
    kind = shape if isinstance(shape, str) else shape[0]
    if kind == "any" or value is None:
        return None
    if kind == "int":
        return None if isinstance(value, int) and not isinstance(value, bool) else _GO_NAMES[kind]
    return None if isinstance(value, _PYTHON_TYPES[kind]) else _GO_NAMES[kind]


def _check(shape: Shape, value: Any, path: str, info: ResourceInfo) -> None:
    wrong = _mismatch(shape, value)
    if wrong is not None:
        raise errors.bad_request(
            f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: json: cannot '
            f"unmarshal {_json_type(value)} into Go struct field {info.kind}.{path} of type {wrong}"
        )
    if value is None or isinstance(shape, str):
        return
    kind, inner = shape
    if kind == "array":
        for item in value:
            _check(inner, item, path, info)
    elif kind == "map":
        for key, item in value.items():
            _check(inner, item, f"{path}.{key}", info)
    else:
        for name, child in inner.items():
            if name in value:
                _check(child, value[name], f"{path}.{name}", info)


def check_shape(info: ResourceInfo, obj: JsonObj) -> None:
    """400 for a body whose fields have the wrong JSON types for their kind."""
    _check(METADATA, obj.get("metadata"), "metadata", info)
    if info.is_custom:
        return
    for name, shape in KIND_SHAPES.get((info.storage_key.group, info.storage_key.resource), {}).items():
        if name in obj:
            _check(shape, obj[name], name, info)
