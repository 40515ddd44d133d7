"""Typed descriptions of Kubernetes resource types and the REST paths that address them.

Public API:

- ``Resource(group, version, plural, kind, namespaced=True)`` -- a frozen description of one
  resource type; ``.api_version`` and ``.path(namespace=None, name=None, subresource=None)``.
- Well-known resources: ``PODS``, ``SERVICES``, ``EVENTS``, ``NODES``, ``NAMESPACES``, ``SECRETS``,
  ``CONFIGMAPS``, ``LEASES``, ``PRIORITY_CLASSES``, ``MUTATING_WEBHOOK_CONFIGURATIONS``,
  ``VALIDATING_WEBHOOK_CONFIGURATIONS``, ``CRDS``, ``PODGROUPS_V1BETA1``, ``QUEUES_V1BETA1``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

__all__ = [
    "CONFIGMAPS",
    "CRDS",
    "EVENTS",
    "LEASES",
    "MUTATING_WEBHOOK_CONFIGURATIONS",
    "NAMESPACES",
    "NODES",
    "PODGROUPS_V1BETA1",
    "PODS",
    "PRIORITY_CLASSES",
    "QUEUES_V1BETA1",
    "SECRETS",
    "SERVICES",
    "VALIDATING_WEBHOOK_CONFIGURATIONS",
    "Resource",
]

# Path segments are RFC 1123 names in practice; anything with a slash would silently address a
# different URL, so it is rejected rather than escaped into something the server may misroute.
_SEGMENT = re.compile(r"^[^/]+$")
# What percent-encoding leaves as it is (RFC 3986's unreserved characters): every RFC 1123 name, so
# the paths of a controller's thousands of requests skip the encoder (1 % of a burst's samples).
_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]+\Z")


def _segment(value: str, what: str) -> str:
    if _UNRESERVED.match(value) and value not in (".", ".."):
        return value
    if not value or not _SEGMENT.match(value) or value in (".", ".."):
        raise ValueError(f"invalid {what} {value!r} for a Kubernetes API path")
    return quote(value, safe="")


@dataclass(frozen=True)
class Resource:
    """One resource type of the Kubernetes API, e.g. core/v1 pods."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` field of objects of this type (``v1`` or ``group/version``)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version_prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The REST path of the collection, of one object, or of one object's subresource.

        For a namespaced resource without ``namespace`` the path is the all-namespaces collection
        (only valid for list and watch). A cluster-scoped resource refuses a namespace.
        """
        if subresource is not None and name is None:
            raise ValueError(f"subresource {subresource!r} of {self} needs an object name")
        parts = [self.group_version_prefix]
        if namespace is not None:
            if not self.namespaced:
                raise ValueError(f"{self} is cluster-scoped: no namespace allowed")
            parts.append(f"/namespaces/{_segment(namespace, 'namespace')}")
        elif name is not None and self.namespaced:
            raise ValueError(f"{self} is namespaced: {name!r} needs a namespace")
        parts.append(f"/{self.plural}")
        if name is not None:
            parts.append(f"/{_segment(name, 'name')}")
        if subresource is not None:
            parts.append(f"/{_segment(subresource, 'subresource')}")
        return "".join(parts)

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
EVENTS = Resource("", "v1", "events", "Event")
SECRETS = Resource("", "v1", "secrets", "Secret")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)
MUTATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
    namespaced=False,
)
VALIDATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
    namespaced=False,
)
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
)
PODGROUPS_V1BETA1 = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
QUEUES_V1BETA1 = Resource("scheduling.volcano.sh", "v1beta1", "queues", "Queue", namespaced=False)
