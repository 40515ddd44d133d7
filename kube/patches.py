"""Patch types that carry their media type, and helpers to build patch bodies.

The patch type is never inferred from the body: ``kubernetes_asyncio`` guesses wrong for custom
objects (a dict goes out as a JSON patch), so every patch in tfgang states its type explicitly.

Public API:

- ``PatchType`` -- ``JSON``, ``MERGE``, ``STRATEGIC``, ``APPLY``; ``.value`` is the media type.
- ``merge_patch(old, new) -> dict`` -- the RFC 7386 merge patch turning ``old`` into ``new``
  (lists are replaced whole; removed keys become ``None``).
- ``compose_merge_patches(first, second) -> dict`` -- one merge patch with the effect of applying
  ``first`` then ``second``.
- ``json_patch_test_resource_version(resource_version) -> dict`` -- a ``test`` operation that makes a
  JSON patch fail with 422 unless the object is still at that resourceVersion.
- ``escape_json_pointer(token) -> str`` -- RFC 6901 escaping of one path token (``~`` and ``/``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

__all__ = [
    "PatchType",
    "compose_merge_patches",
    "escape_json_pointer",
    "json_patch_test_resource_version",
    "merge_patch",
]


class PatchType(enum.Enum):
    JSON = "application/json-patch+json"
    MERGE = "application/merge-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"

    @property
    def content_type(self) -> str:
        return self.value


def merge_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The smallest JSON merge patch that turns ``old`` into ``new`` (empty when equal)."""
    patch: dict[str, Any] = {}
    for key in old:
        if key not in new:
            patch[key] = None
    for key, new_value in new.items():
        if key not in old:
            patch[key] = new_value
            continue
        old_value = old[key]
        if isinstance(old_value, Mapping) and isinstance(new_value, Mapping):
            nested = merge_patch(old_value, new_value)
            if nested:
                patch[key] = nested
        elif old_value != new_value or type(old_value) is not type(new_value):
            patch[key] = new_value
    return patch


def _without_nulls(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return value
    return {key: _without_nulls(item) for key, item in value.items() if item is not None}


def compose_merge_patches(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    """One RFC 7386 merge patch that does what ``first`` and then ``second`` do."""
    composed = dict(first)
    for key, value in second.items():
        earlier = composed.get(key)
        if isinstance(value, Mapping) and isinstance(earlier, Mapping):
            composed[key] = compose_merge_patches(earlier, value)
        elif isinstance(value, Mapping) and key in composed:
            # ``first`` replaced the member with a non-object, so ``second`` merges into nothing:
            # the member becomes ``second``'s object as it stands, deletions and all applied.
            composed[key] = _without_nulls(value)
        else:
            composed[key] = value
    return composed


def escape_json_pointer(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def json_patch_test_resource_version(resource_version: str) -> dict[str, Any]:
    return {"op": "test", "path": "/metadata/resourceVersion", "value": resource_version}
