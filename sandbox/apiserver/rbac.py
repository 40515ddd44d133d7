"""Optional RBAC authorization: the stored Roles, ClusterRoles and their bindings, evaluated like
kube-apiserver's RBAC authorizer (off by default: the sandbox then lets every user do everything).

Members of ``system:masters`` are always allowed, as on a real cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.apiserver import errors
from sandbox.apiserver.auth import UserInfo
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.registry import StorageKey
from sandbox.apiserver.storage import Storage

RBAC_GROUP = "rbac.authorization.k8s.io"
ROLES = StorageKey(RBAC_GROUP, "roles")
CLUSTER_ROLES = StorageKey(RBAC_GROUP, "clusterroles")
ROLE_BINDINGS = StorageKey(RBAC_GROUP, "rolebindings")
CLUSTER_ROLE_BINDINGS = StorageKey(RBAC_GROUP, "clusterrolebindings")
SUPERUSER_GROUP = "system:masters"


@dataclass(frozen=True)
class Attributes:
    user: UserInfo
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str


def _subject_matches(subject: JsonObj, user: UserInfo, binding_namespace: str) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        return bool(subject.get("name") == user.username)
    if kind == "Group":
        return subject.get("name") in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return user.username == f"system:serviceaccount:{namespace}:{subject.get('name')}"
    return False


def _rule_allows(rule: JsonObj, attrs: Attributes) -> bool:
    verbs = rule.get("verbs") or []
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and attrs.group not in groups:
        return False
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    resources = rule.get("resources") or []
    if not (
        "*" in resources
        or resource in resources
        or (attrs.subresource and f"*/{attrs.subresource}" in resources)
    ):
        return False
    names = rule.get("resourceNames") or []
    return not names or (bool(attrs.name) and attrs.name in names)


class Authorizer:
    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def _rules(self, role_ref: JsonObj, namespace: str) -> list[JsonObj]:
        if role_ref.get("kind") == "ClusterRole":
            role = self.storage.get(CLUSTER_ROLES, "", str(role_ref.get("name", "")))
        else:
            role = self.storage.get(ROLES, namespace, str(role_ref.get("name", "")))
        return list((role or {}).get("rules") or [])

    def allows(self, attrs: Attributes) -> bool:
        if SUPERUSER_GROUP in attrs.user.groups:
            return True
        bindings: list[tuple[JsonObj, str]] = [
            (b, "") for b in self.storage.list_in(CLUSTER_ROLE_BINDINGS, None)
        ]
        if attrs.namespace:
            bindings += [(b, attrs.namespace) for b in self.storage.list_in(ROLE_BINDINGS, attrs.namespace)]
        for binding, namespace in bindings:
            if not any(_subject_matches(s, attrs.user, namespace) for s in binding.get("subjects") or []):
                continue
            if any(
                _rule_allows(rule, attrs) for rule in self._rules(binding.get("roleRef") or {}, namespace)
            ):
                return True
        return False

    def check(self, attrs: Attributes) -> None:
        """Raise kube-apiserver's 403 when RBAC does not allow the request."""
        if self.allows(attrs):
            return
        resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
        qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
        target = f'{qualified} "{attrs.name}"' if attrs.name else qualified
        message = (
            f'{target} is forbidden: User "{attrs.user.username}" cannot {attrs.verb} resource '
            f'"{resource}" in API group "{attrs.group}" {where}'
        )
        details: JsonObj = {"name": attrs.name, "group": attrs.group, "kind": attrs.resource}
        if not attrs.group:
            del details["group"]
        raise errors.ApiError(403, "Forbidden", message, details)
