"""What resources the server serves: the built-in kinds, plus those of every established CRD."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kube.schema import StructuralSchema
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

    @functools.cached_property
    def structural(self) -> StructuralSchema | None:
        """The schema compiled for pruning, defaulting and validation (kube.schema), on first use."""
        return StructuralSchema(self.schema) if self.schema else None


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


def _kind(api_version: str, resource: str, kind: str, namespaced: bool = True, **extra: Any) -> ResourceInfo:
    """A built-in kind; its singular name is its kind in lower case, as for every built-in."""
    group, _, version = api_version.rpartition("/")
    return ResourceInfo(group, version, resource, kind.lower(), kind, namespaced, **extra)


# The buckets the server itself reads and writes, named once.
PODS = StorageKey("", "pods")
NODES = StorageKey("", "nodes")
SERVICES = StorageKey("", "services")
NAMESPACES = StorageKey("", "namespaces")
SERVICE_ACCOUNTS = StorageKey("", "serviceaccounts")
SECRETS = StorageKey("", "secrets")
LEASES = StorageKey("coordination.k8s.io", "leases")
DEPLOYMENTS = StorageKey("apps", "deployments")
PRIORITY_CLASSES = StorageKey("scheduling.k8s.io", "priorityclasses")
CRDS = StorageKey("apiextensions.k8s.io", "customresourcedefinitions")
MUTATING_WEBHOOKS = StorageKey("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
VALIDATING_WEBHOOKS = StorageKey("admissionregistration.k8s.io", "validatingwebhookconfigurations")
EVENTS = StorageKey("", "events")

ALL = ("all",)
API_EXTENSIONS = ("api-extensions",)
STATUS = ("status",)
RBAC = "rbac.authorization.k8s.io/v1"
WEBHOOKS = "admissionregistration.k8s.io/v1"

BUILTIN_RESOURCES: tuple[ResourceInfo, ...] = (
    _kind(
        "v1",
        "namespaces",
        "Namespace",
        False,
        short_names=("ns",),
        subresources=("status", "finalize"),
        verbs=tuple(verb for verb in STANDARD_VERBS if verb != "deletecollection"),
    ),
    _kind("v1", "nodes", "Node", False, short_names=("no",), subresources=STATUS),
    _kind(
        "v1",
        "pods",
        "Pod",
        short_names=("po",),
        categories=ALL,
        subresources=("status", "binding", "eviction", "log"),
    ),
    _kind("v1", "services", "Service", short_names=("svc",), categories=ALL, subresources=STATUS),
    _kind("v1", "endpoints", "Endpoints", short_names=("ep",)),
    _kind("v1", "events", "Event", short_names=("ev",)),
    _kind("v1", "secrets", "Secret"),
    _kind("v1", "configmaps", "ConfigMap", short_names=("cm",)),
    _kind("v1", "serviceaccounts", "ServiceAccount", short_names=("sa",)),
    _kind(
        "apps/v1", "deployments", "Deployment", short_names=("deploy",), categories=ALL, subresources=STATUS
    ),
    _kind("events.k8s.io/v1", "events", "Event", short_names=("ev",), storage=EVENTS),
    _kind("coordination.k8s.io/v1", "leases", "Lease"),
    _kind(
        "policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", short_names=("pdb",), subresources=STATUS
    ),
    _kind("scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", False, short_names=("pc",)),
    *(
        _kind(WEBHOOKS, f"{kind.lower()}s", kind, False, categories=API_EXTENSIONS)
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    ),
    _kind(
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        short_names=("crd", "crds"),
        categories=API_EXTENSIONS,
        subresources=STATUS,
    ),
    _kind(RBAC, "clusterroles", "ClusterRole", False),
    _kind(RBAC, "clusterrolebindings", "ClusterRoleBinding", False),
    _kind(RBAC, "roles", "Role"),
    _kind(RBAC, "rolebindings", "RoleBinding"),
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
