"""Opt-in RBAC: the stored roles and bindings decide, with kube-apiserver's Forbidden wording."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.testing import ApiServerHandle, start_apiserver
from tests.sandbox.apiserver.conftest import Kubectl

ACCOUNT = "system:serviceaccount:tfgang:controller"


@pytest.fixture(scope="module")
def rbac_api() -> Iterator[ApiServerHandle]:
    with start_apiserver(authorize=True) as handle:
        yield handle


def apply(admin: Kubectl, *objects: dict[str, object]) -> None:
    admin.run(
        "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    )


def test_roles_and_bindings_decide(rbac_api: ApiServerHandle, tmp_path: Path) -> None:
    admin = Kubectl(rbac_api.kubeconfig, str(tmp_path / "admin-cache"))
    admin.run("create", "namespace", "tfgang")
    apply(
        admin,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "pods", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch", "create"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "pods", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pods"},
            "subjects": [{"kind": "ServiceAccount", "name": "controller", "namespace": "tfgang"}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "status"},
            "rules": [
                {"apiGroups": ["kubeflow.org"], "resources": ["tfjobs/status"], "verbs": ["get", "patch"]}
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "status"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "status"},
            "subjects": [{"kind": "ServiceAccount", "name": "controller", "namespace": "tfgang"}],
        },
    )
    _token, path = rbac_api.add_user(ACCOUNT, ("system:serviceaccounts", "system:authenticated"))
    controller = Kubectl(path, str(tmp_path / "controller-cache"))
    assert controller.run("get", "pods", "-n", "default").returncode == 0
    denied = controller.run("get", "pods", "-n", "kube-system", check=False)
    assert denied.stderr.strip() == (
        f'Error from server (Forbidden): pods is forbidden: User "{ACCOUNT}" cannot list resource "pods" in '
        'API group "" in the namespace "kube-system"'
    )
    named = controller.run("delete", "pod", "x", "-n", "default", check=False)
    assert (
        f'pods "x" is forbidden: User "{ACCOUNT}" cannot delete resource "pods" in API group "" in the '
        'namespace "default"'
    ) in named.stderr
    nodes = controller.run("get", "nodes", check=False)
    assert (
        f'User "{ACCOUNT}" cannot list resource "nodes" in API group "" at the cluster scope' in nodes.stderr
    )
    admin.run("apply", "-f", str(Path(__file__).resolve().parents[3] / "examples" / "seed" / "normal.yaml"))
    patched = controller.run(
        "patch",
        "tfjob",
        "tftest",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status": {"conditions": []}}',
        check=False,
    )
    assert "forbidden" not in patched.stderr
    spec = controller.run("patch", "tfjob", "tftest", "--type=merge", "-p", '{"spec": {}}', check=False)
    assert 'cannot get resource "tfjobs" in API group "kubeflow.org"' in spec.stderr
