"""Discovery documents: /api, /apis, group and group-version resource lists, /version."""

from __future__ import annotations

from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.registry import Registry, ResourceInfo

KUBERNETES_VERSION = {"major": "1", "minor": "37", "gitVersion": "v1.37.1-tfgang-sandbox"}

SUBRESOURCE_VERBS = {
    "status": ("get", "patch", "update"),
    "binding": ("create",),
    "eviction": ("create",),
    "log": ("get",),
    "finalize": ("update",),
    "scale": ("get", "patch", "update"),
}
SUBRESOURCE_KINDS = {"binding": "Binding", "eviction": "Eviction", "scale": "Scale"}
SUBRESOURCE_GROUP_VERSIONS = {"eviction": ("policy", "v1")}
"""Subresources whose kind lives in another API group than their resource's."""


def version_info() -> JsonObj:
    return {
        **KUBERNETES_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-11-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> JsonObj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_entry(group: str, versions: list[str]) -> JsonObj:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> JsonObj:
    groups = [_group_entry(group, versions) for group, versions in registry.group_versions().items() if group]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> JsonObj | None:
    versions = registry.group_versions().get(group)
    if not versions or not group:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def _aliases(info: ResourceInfo) -> JsonObj:
    """``shortNames`` and ``categories``, each only when there are some, as both discovery forms have them."""
    named = (("shortNames", info.short_names), ("categories", info.categories))
    return {key: list(values) for key, values in named if values}


def _resource_entries(info: ResourceInfo) -> list[JsonObj]:
    main: JsonObj = {
        "name": info.resource,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": list(info.verbs),
        **_aliases(info),
    }
    entries = [main]
    for sub in info.subresources:
        entries.append(
            {
                "name": f"{info.resource}/{sub}",
                "singularName": "",
                "namespaced": info.namespaced,
                "kind": SUBRESOURCE_KINDS.get(sub, info.kind),
                "verbs": list(SUBRESOURCE_VERBS.get(sub, ())),
            }
        )
        if sub in SUBRESOURCE_GROUP_VERSIONS:
            entries[-1]["group"], entries[-1]["version"] = SUBRESOURCE_GROUP_VERSIONS[sub]
    return entries


def api_resource_list(registry: Registry, group: str, version: str) -> JsonObj | None:
    infos = registry.resources_in(group, version)
    if not infos:
        return None
    resources = [entry for info in infos for entry in _resource_entries(info)]
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def _discovery_resource(info: ResourceInfo) -> JsonObj:
    entry: JsonObj = {
        "resource": info.resource,
        "responseKind": {"group": info.group, "version": info.version, "kind": info.kind},
        "scope": "Namespaced" if info.namespaced else "Cluster",
        "singularResource": info.singular,
        "verbs": list(info.verbs),
        **_aliases(info),
    }
    if info.subresources:
        entry["subresources"] = [
            {
                "subresource": sub,
                "responseKind": {
                    "group": SUBRESOURCE_GROUP_VERSIONS.get(sub, ("", ""))[0]
                    if sub in SUBRESOURCE_KINDS
                    else info.group,
                    "version": SUBRESOURCE_GROUP_VERSIONS.get(sub, ("", "v1"))[1]
                    if sub in SUBRESOURCE_KINDS
                    else info.version,
                    "kind": SUBRESOURCE_KINDS.get(sub, info.kind),
                },
                "verbs": list(SUBRESOURCE_VERBS.get(sub, ())),
            }
            for sub in info.subresources
        ]
    return entry


def aggregated_discovery(registry: Registry, legacy: bool) -> JsonObj:
    """apidiscovery.k8s.io/v2 APIGroupDiscoveryList for ``/api`` (legacy) or ``/apis``."""
    items = []
    for group, versions in registry.group_versions().items():
        if bool(group) == legacy:
            continue
        item: JsonObj = {"metadata": {"name": group} if group else {}, "versions": []}
        for version in versions:
            resources = [_discovery_resource(info) for info in registry.resources_in(group, version)]
            item["versions"].append({"version": version, "resources": resources, "freshness": "Current"})
        items.append(item)
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }
