"""Read-only views over raw objects' metadata, in the style of kopf's ``Meta``.

Objects arrive as JSON from an API server, a watch or an admission request, and any field may be
missing or of the wrong type. The views answer with a typed value or an empty one instead of
raising, so callers never repeat the ``isinstance`` dance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

# An object as an API server, a watch or a review hands it over, read but not changed: what the
# readers in every room take (kopf's ``Body``).
Body = Mapping[str, Any]

EMPTY: Final[Body] = MappingProxyType({})


def mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one."""
    # Decoded JSON objects are dicts: checked first, as the Mapping ABC's check costs several times
    # more and runs many times per admission.
    if type(value) is dict:
        return value
    return value if isinstance(value, Mapping) else EMPTY


def sequence(value: object) -> Sequence[Any]:
    """``value`` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list | tuple) else ()


def text(value: object) -> str:
    """``value`` when it is a string, else ""."""
    return value if isinstance(value, str) else ""


class _Text:
    """A scalar metadata field read as text: "" when it is absent or not a scalar."""

    def __init__(self, key: str) -> None:
        self.key = key

    def __get__(self, meta: Meta | None, owner: type | None = None) -> str:
        if meta is None:
            raise AttributeError(self.key)
        return scalar_text(meta.raw.get(self.key))


class Meta:
    """The ``metadata`` of one raw object; every accessor tolerates any shape."""

    __slots__ = ("raw",)

    def __init__(self, obj: Mapping[str, Any] | None) -> None:
        self.raw: Mapping[str, Any] = mapping(obj.get("metadata")) if obj is not None else EMPTY

    name = _Text("name")
    namespace = _Text("namespace")
    uid = _Text("uid")
    resource_version = _Text("resourceVersion")

    @property
    def key(self) -> str:
        """``namespace/name``, or ``name`` for a cluster-scoped object (client-go's object key)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def labels(self) -> Mapping[str, Any]:
        return mapping(self.raw.get("labels"))

    @property
    def annotations(self) -> Mapping[str, Any]:
        return mapping(self.raw.get("annotations"))

    def label(self, key: str) -> str | None:
        """The label's value when it is a string, else None."""
        value = self.labels.get(key)
        return value if isinstance(value, str) else None

    def annotation(self, key: str) -> str | None:
        value = self.annotations.get(key)
        return value if isinstance(value, str) else None

    @property
    def deleting(self) -> bool:
        """True once a deletionTimestamp is set: the object is terminating."""
        return bool(self.raw.get("deletionTimestamp"))

    @property
    def owner_references(self) -> list[Mapping[str, Any]]:
        return [
            ref
            for ref in sequence(self.raw.get("ownerReferences"))
            if type(ref) is dict or isinstance(ref, Mapping)
        ]

    @property
    def controller(self) -> Mapping[str, Any] | None:
        """The ownerReference with ``controller: true``; Kubernetes allows at most one."""
        # A loop, not ``owner_references``: read on every pod admission, twice.
        for ref in sequence(self.raw.get("ownerReferences")):
            if (type(ref) is dict or isinstance(ref, Mapping)) and ref.get("controller") is True:
                return ref
        return None

    @property
    def controller_uid(self) -> str:
        """The uid in the controller ownerReference, or ""."""
        return scalar_text(mapping(self.controller).get("uid"))


def scalar_text(value: object) -> str:
    # Names and uids are strings on the wire; a number there is still shown, anything else is absent.
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool | Mapping | list):
        return ""
    return str(value)
