"""PATCH bodies: JSON patch, JSON merge patch and strategic merge patch, chosen by Content-Type."""

from __future__ import annotations

import copy
import json
from enum import Enum
from typing import Any

import jsonpatch
import yaml

from sandbox.apiserver import errors
from sandbox.apiserver.jsonobj import JsonObj


class PatchType(Enum):
    JSON = "application/json-patch+json"
    MERGE = "application/merge-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


BUILTIN_PATCH_TYPES = (PatchType.JSON, PatchType.MERGE, PatchType.STRATEGIC, PatchType.APPLY)
CUSTOM_PATCH_TYPES = (PatchType.JSON, PatchType.MERGE, PatchType.APPLY)

# Merge keys of the built-in list fields tfgang and kubectl touch (the patchMergeKey struct tags).
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "conditions": "type",
    "ownerReferences": "uid",
    "resourceClaims": "name",
    "podIPs": "ip",
    "hostIPs": "ip",
    "readinessGates": "conditionType",
    "addresses": "type",
}
PRIMITIVE_MERGE_LISTS = frozenset({"finalizers"})


def patch_type_of(content_type: str, custom: bool) -> PatchType:
    media = content_type.split(";", 1)[0].strip().lower()
    allowed = CUSTOM_PATCH_TYPES if custom else BUILTIN_PATCH_TYPES
    for patch_type in allowed:
        if patch_type.value == media:
            return patch_type
    raise errors.unsupported_media_type([t.value for t in allowed])


def decode_patch(patch_type: PatchType, body: bytes) -> Any:
    try:
        if patch_type is PatchType.APPLY:
            return yaml.safe_load(body.decode() or "{}")
        return json.loads(body or b"null")
    except (ValueError, yaml.YAMLError) as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from exc


def apply_patch(patch_type: PatchType, original: JsonObj, patch: Any) -> JsonObj:
    """The patched object. ``original`` must be a private copy: merge patches change it in place."""
    if patch_type is PatchType.JSON:
        if not isinstance(patch, list):
            raise errors.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        try:
            result = jsonpatch.apply_patch(original, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise errors.ApiError(422, "Invalid", str(exc)) from exc
        except (KeyError, IndexError, TypeError) as exc:
            raise errors.ApiError(
                422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
            ) from exc
        if not isinstance(result, dict):
            raise errors.bad_request("the patch did not produce an object")
        return result
    if not isinstance(patch, dict):
        raise errors.bad_request("the patch must be a JSON object")
    if patch_type is PatchType.MERGE:
        merged = merge_patch(original, patch)
    else:
        merged = strategic_merge(original, patch)
    if not isinstance(merged, dict):
        raise errors.bad_request("the patch did not produce an object")
    return merged


def merge_patch(original: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null deletes, everything else replaces (``original`` in place)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = original if isinstance(original, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge(original: Any, patch: Any, field: str = "") -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result = original if isinstance(original, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            target = key.split("/", 1)[1]
            if isinstance(result.get(target), list):
                result[target] = [item for item in result[target] if item not in (value or [])]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        elif isinstance(value, dict):
            merged = strategic_merge(result.get(key), value, key)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = value
    for key, order in patch.items():
        if key.startswith("$setElementOrder/") and isinstance(order, list):
            target = key.split("/", 1)[1]
            if isinstance(result.get(target), list):
                result[target] = _apply_order(target, result[target], order)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        return "containerPort" if any(isinstance(i, dict) and "containerPort" in i for i in items) else "port"
    return MERGE_KEYS.get(field)


def _merge_list(field: str, original: Any, patch: list[Any]) -> list[Any]:
    current = original if isinstance(original, list) else []
    if patch and isinstance(patch[0], dict) and patch[0].get("$patch") == "replace":
        return copy.deepcopy(patch[1:])
    if field in PRIMITIVE_MERGE_LISTS:
        return current + [item for item in patch if item not in current]
    key = _merge_key(field, current + patch)
    if key is None or not all(isinstance(item, dict) for item in patch):
        return copy.deepcopy(patch)
    for item in patch:
        position = next(
            (
                i
                for i, existing in enumerate(current)
                if isinstance(existing, dict) and existing.get(key) == item.get(key)
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if position is not None:
                current.pop(position)
            continue
        if position is None:
            current.append(strategic_merge({}, item, field))
        else:
            current[position] = strategic_merge(current[position], item, field)
    return current


def _apply_order(field: str, items: list[Any], order: list[Any]) -> list[Any]:
    key = _merge_key(field, items)
    if key is None:
        return items
    wanted = [entry.get(key) if isinstance(entry, dict) else entry for entry in order]
    rank = {value: index for index, value in enumerate(wanted)}
    return sorted(
        items, key=lambda item: rank.get(item.get(key) if isinstance(item, dict) else item, len(rank))
    )
