"""Kubernetes protobuf request bodies for the few kinds kubectl's generators send that way.

kubectl's typed clients (``kubectl create namespace|configmap|secret|serviceaccount``) send
``application/vnd.kubernetes.protobuf``: the ``k8s\\x00`` magic, then a ``runtime.Unknown`` message
holding the TypeMeta and the object's own protobuf. This decodes those kinds into their JSON
form; other kinds stay unsupported (415), as the sandbox otherwise speaks JSON and YAML.
"""

from __future__ import annotations

import base64
from typing import Any

from sandbox.apiserver import errors
from sandbox.apiserver.jsonobj import JsonObj

Field = tuple[str, Any, bool]  # JSON name, kind (a name or a nested schema), repeated
Schema = dict[int, Field]

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"

OWNER_REFERENCE: Schema = {
    1: ("kind", "string", False),
    3: ("name", "string", False),
    4: ("uid", "string", False),
    5: ("apiVersion", "string", False),
    6: ("controller", "bool", False),
    7: ("blockOwnerDeletion", "bool", False),
}
OBJECT_META: Schema = {
    1: ("name", "string", False),
    2: ("generateName", "string", False),
    3: ("namespace", "string", False),
    5: ("uid", "string", False),
    6: ("resourceVersion", "string", False),
    7: ("generation", "int", False),
    11: ("labels", "map_string", True),
    12: ("annotations", "map_string", True),
    13: ("ownerReferences", OWNER_REFERENCE, True),
    14: ("finalizers", "string", True),
}
LOCAL_OBJECT_REFERENCE: Schema = {1: ("name", "string", False)}
OBJECT_REFERENCE: Schema = {
    1: ("kind", "string", False),
    2: ("namespace", "string", False),
    3: ("name", "string", False),
    4: ("uid", "string", False),
    5: ("apiVersion", "string", False),
}
KINDS: dict[tuple[str, str], Schema] = {
    ("v1", "Namespace"): {
        1: ("metadata", OBJECT_META, False),
        2: ("spec", {1: ("finalizers", "string", True)}, False),
    },
    ("v1", "ConfigMap"): {
        1: ("metadata", OBJECT_META, False),
        2: ("data", "map_string", True),
        3: ("binaryData", "map_bytes", True),
        4: ("immutable", "bool", False),
    },
    ("v1", "Secret"): {
        1: ("metadata", OBJECT_META, False),
        2: ("data", "map_bytes", True),
        3: ("type", "string", False),
        4: ("stringData", "map_string", True),
        5: ("immutable", "bool", False),
    },
    ("v1", "ServiceAccount"): {
        1: ("metadata", OBJECT_META, False),
        2: ("secrets", OBJECT_REFERENCE, True),
        3: ("automountServiceAccountToken", "bool", False),
        4: ("imagePullSecrets", LOCAL_OBJECT_REFERENCE, True),
    },
}
UNKNOWN: Schema = {
    1: ("typeMeta", {1: ("apiVersion", "string", False), 2: ("kind", "string", False)}, False),
    2: ("raw", "raw", False),
    3: ("contentEncoding", "string", False),
    4: ("contentType", "string", False),
}


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data):
            raise ValueError("truncated varint")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) for each field: ints for varints, bytes otherwise."""
    fields = []
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, position = _varint(data, position)
        elif wire == 2:
            length, position = _varint(data, position)
            value, position = data[position : position + length], position + length
        elif wire == 1:
            value, position = data[position : position + 8], position + 8
        elif wire == 5:
            value, position = data[position : position + 4], position + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        fields.append((number, wire, value))
    return fields


def _scalar(kind: str, value: Any) -> Any:
    if kind == "string":
        return bytes(value).decode()
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode()
    if kind == "bool":
        return bool(value)
    if kind == "int":
        return value
    return bytes(value)


def decode_message(data: bytes, schema: Schema) -> JsonObj:
    result: JsonObj = {}
    for number, _wire, value in _fields(data):
        if number not in schema:
            continue
        name, kind, repeated = schema[number]
        if kind in ("map_string", "map_bytes"):
            entry = {n: v for n, _w, v in _fields(value)}
            mapped = _scalar("string" if kind == "map_string" else "bytes", entry.get(2, b""))
            result.setdefault(name, {})[bytes(entry.get(1, b"")).decode()] = mapped
            continue
        decoded = decode_message(value, kind) if isinstance(kind, dict) else _scalar(kind, value)
        if repeated:
            result.setdefault(name, []).append(decoded)
        else:
            result[name] = decoded
    return result


def decode_body(raw: bytes) -> JsonObj:
    """A protobuf request body as the JSON object it encodes (400 when malformed, 415 for other kinds)."""
    if not raw.startswith(MAGIC):
        raise errors.bad_request("the protobuf body does not start with the Kubernetes magic number")
    try:
        unknown = decode_message(raw[len(MAGIC) :], UNKNOWN)
        type_meta = unknown.get("typeMeta") or {}
        key = (str(type_meta.get("apiVersion", "")), str(type_meta.get("kind", "")))
        schema = KINDS.get(key)
        if schema is None:
            raise errors.unsupported_media_type(["application/json", "application/yaml"])
        obj = decode_message(bytes(unknown.get("raw", b"")), schema)
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"error decoding the protobuf body: {exc}") from exc
    return {"apiVersion": key[0], "kind": key[1], **obj}
