"""What resources the server serves: the built-in kinds, plus those of every established CRD."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sandbox.apiserver.jsonobj import JsonObj

logger = logging.getLogger(__name__)


STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class StorageKey:
    """Where objects live: one bucket per group and resource, whatever version they are served in."""

    group: str
    resource: str


@dataclass(frozen=True)
class CustomResourceSchema:
    """The parts of a CRD version that the server acts on."""

    schema: JsonObj | None
    printer_columns: tuple[JsonObj, ...]
    selectable_fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResourceInfo:
    group: str
    version: str
    resource: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    subresources: tuple[str, ...] = ()
    storage: StorageKey | None = None
    custom: CustomResourceSchema | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def storage_key(self) -> StorageKey:
        return self.storage or StorageKey(self.group, self.resource)

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def is_custom(self) -> bool:
        return self.custom is not None


def _core(resource: str, singular: str, kind: str, namespaced: bool = True, **extra: Any) -> ResourceInfo:
    return ResourceInfo("", "v1", resource, singular, kind, namespaced, **extra)


def _builtin(
    group: str, version: str, resource: str, singular: str, kind: str, namespaced: bool = True, **extra: Any
) -> ResourceInfo:
    return ResourceInfo(group, version, resource, singular, kind, namespaced, **extra)


BUILTIN_RESOURCES: tuple[ResourceInfo, ...] = (
    _core(
        "namespaces",
        "namespace",
        "Namespace",
        False,
        short_names=("ns",),
        subresources=("status", "finalize"),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    ),
    _core("nodes", "node", "Node", False, short_names=("no",), subresources=("status",)),
    _core(
        "pods",
        "pod",
        "Pod",
        short_names=("po",),
        categories=("all",),
        subresources=("status", "binding", "log"),
    ),
    _core(
        "services",
        "service",
        "Service",
        short_names=("svc",),
        categories=("all",),
        subresources=("status",),
        verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
    ),
    _core("endpoints", "endpoints", "Endpoints", short_names=("ep",)),
    _core("events", "event", "Event", short_names=("ev",)),
    _core("secrets", "secret", "Secret"),
    _core("configmaps", "configmap", "ConfigMap", short_names=("cm",)),
    _core("serviceaccounts", "serviceaccount", "ServiceAccount", short_names=("sa",)),
    _builtin(
        "apps",
        "v1",
        "deployments",
        "deployment",
        "Deployment",
        short_names=("deploy",),
        categories=("all",),
        subresources=("status",),
    ),
    _builtin(
        "events.k8s.io",
        "v1",
        "events",
        "event",
        "Event",
        short_names=("ev",),
        storage=StorageKey("", "events"),
    ),
    _builtin("coordination.k8s.io", "v1", "leases", "lease", "Lease"),
    _builtin(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "PodDisruptionBudget",
        short_names=("pdb",),
        subresources=("status",),
    ),
    _builtin(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "priorityclass",
        "PriorityClass",
        False,
        short_names=("pc",),
    ),
    _builtin(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "mutatingwebhookconfiguration",
        "MutatingWebhookConfiguration",
        False,
        categories=("api-extensions",),
    ),
    _builtin(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "validatingwebhookconfiguration",
        "ValidatingWebhookConfiguration",
        False,
        categories=("api-extensions",),
    ),
    _builtin(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "customresourcedefinition",
        "CustomResourceDefinition",
        False,
        short_names=("crd", "crds"),
        categories=("api-extensions",),
        subresources=("status",),
    ),
    _builtin("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", False),
    _builtin(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "clusterrolebinding",
        "ClusterRoleBinding",
        False,
    ),
    _builtin("rbac.authorization.k8s.io", "v1", "roles", "role", "Role"),
    _builtin("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding"),
)

# Group order in discovery, as kube-apiserver lists its groups (custom groups follow).
BUILTIN_GROUP_ORDER = (
    "",
    "apps",
    "events.k8s.io",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
)


def infos_from_crd(crd: JsonObj) -> list[ResourceInfo]:
    """One ResourceInfo per served version of a CustomResourceDefinition object."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = str(spec.get("group", ""))
    plural = str(names.get("plural", ""))
    kind = str(names.get("kind", ""))
    infos: list[ResourceInfo] = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        selectable = tuple(str(f.get("jsonPath", "")) for f in version.get("selectableFields") or [])
        infos.append(
            ResourceInfo(
                group=group,
                version=str(version.get("name", "")),
                resource=plural,
                singular=str(names.get("singular") or kind.lower()),
                kind=kind,
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=tuple(name for name in ("status", "scale") if name in subresources),
                custom=CustomResourceSchema(
                    schema, tuple(version.get("additionalPrinterColumns") or ()), selectable
                ),
            )
        )
    return infos


@dataclass
class Registry:
    """Served resources by (group, version, plural), and the group/version listing for discovery."""

    _infos: dict[tuple[str, str, str], ResourceInfo] = field(default_factory=dict)
    _crd_resources: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)

    @classmethod
    def with_builtins(cls) -> Registry:
        registry = cls()
        for info in BUILTIN_RESOURCES:
            registry._infos[(info.group, info.version, info.resource)] = info
        return registry

    def lookup(self, group: str, version: str, resource: str) -> ResourceInfo | None:
        return self._infos.get((group, version, resource))

    def all(self) -> Iterator[ResourceInfo]:
        return iter(self._infos.values())

    def for_storage(self, key: StorageKey) -> list[ResourceInfo]:
        return [info for info in self._infos.values() if info.storage_key == key]

    def preferred(self, key: StorageKey) -> ResourceInfo | None:
        candidates = [
            info for info in self._infos.values() if info.storage_key == key and info.storage is None
        ]
        return candidates[0] if candidates else None

    def group_versions(self) -> dict[str, list[str]]:
        """Group -> served versions, the preferred (first listed) version first."""
        result: dict[str, list[str]] = {}
        for group in BUILTIN_GROUP_ORDER:
            result[group] = []
        for info in self._infos.values():
            versions = result.setdefault(info.group, [])
            if info.version not in versions:
                versions.append(info.version)
        return {group: versions for group, versions in result.items() if versions}

    def resources_in(self, group: str, version: str) -> list[ResourceInfo]:
        return [info for info in self._infos.values() if info.group == group and info.version == version]

    def install_crd(self, crd: JsonObj) -> None:
        name = str((crd.get("metadata") or {}).get("name", ""))
        self.remove_crd(name)
        keys = []
        for info in infos_from_crd(crd):
            key = (info.group, info.version, info.resource)
            self._infos[key] = info
            keys.append(key)
        self._crd_resources[name] = keys
        logger.info("serving %s", name)

    def remove_crd(self, name: str) -> None:
        for key in self._crd_resources.pop(name, []):
            self._infos.pop(key, None)
