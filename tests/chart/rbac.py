"""What the chart's RBAC objects allow a ServiceAccount, as flat grants a test can compare.

``granted(objects, "tfgang-controller")`` expands every (Cluster)RoleBinding of that account into
one ``Grant`` per (namespace, group, resource, verb, resourceName); ``allows`` answers whether a
request is authorized by those grants the way Kubernetes RBAC decides it. A request-log test can
check both directions with them: every request allowed, and every grant used.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from .render import is_test_hook

CLUSTER_WIDE = "*"
ANY_NAME = ""


class Grant(NamedTuple):
    # the Role's namespace, or CLUSTER_WIDE for a ClusterRole bound by a ClusterRoleBinding
    where: str
    group: str
    # "tfjobs", or "tfjobs/status" for a subresource
    resource: str
    verb: str
    # ANY_NAME unless the rule lists resourceNames
    name: str


def granted(
    objects: Iterable[dict[str, Any]], service_account: str, service_account_namespace: str = "tfgang"
) -> set[Grant]:
    """Every grant the chart's bindings give ``service_account`` (test hooks left out)."""
    objects = [obj for obj in objects if not is_test_hook(obj)]
    roles = {
        (obj["kind"], obj["metadata"].get("namespace", CLUSTER_WIDE), obj["metadata"]["name"]): obj
        for obj in objects
        if obj["kind"] in ("Role", "ClusterRole")
    }
    subject = ("ServiceAccount", service_account, service_account_namespace)
    grants: set[Grant] = set()
    for binding in objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if subject not in {(s["kind"], s["name"], s.get("namespace")) for s in binding["subjects"]}:
            continue
        where = binding["metadata"].get("namespace", CLUSTER_WIDE)
        ref = binding["roleRef"]
        role = roles[(ref["kind"], where if ref["kind"] == "Role" else CLUSTER_WIDE, ref["name"])]
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        for name in rule.get("resourceNames") or [ANY_NAME]:
                            grants.add(Grant(where, group, resource, verb, name))
    return grants


def allows(
    grants: Iterable[Grant], *, verb: str, group: str, resource: str, namespace: str, name: str
) -> bool:
    """Whether a request is authorized; ``namespace`` is "" for cluster-scoped or all-namespace calls."""
    return any(
        matching_grants(grants, verb=verb, group=group, resource=resource, namespace=namespace, name=name)
    )


def matching_grants(
    grants: Iterable[Grant], *, verb: str, group: str, resource: str, namespace: str, name: str
) -> list[Grant]:
    """The grants that authorize a request (for finding unused ones)."""
    return [
        grant
        for grant in grants
        if (grant.verb, grant.group, grant.resource) == (verb, group, resource)
        and (grant.where == CLUSTER_WIDE or grant.where == namespace)
        and (grant.name == ANY_NAME or grant.name == name)
    ]
