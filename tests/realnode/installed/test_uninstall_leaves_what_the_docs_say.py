"""docs/deployment.md's "Uninstall", run word for word on the node: ``helm uninstall`` leaves exactly
the objects that section names, and its further commands remove them but the TFJob CRD and the
TFJobs, which stay. Runs after every other test of this folder (its conftest orders it last)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from realcluster.helmrelease import (
    DEPLOYMENT_DOC,
    NAMESPACE,
    RELEASE,
    Release,
    documented_uninstall_commands,
)
from tests.realnode.installed.podview import apply, small_job, until

pytestmark = [pytest.mark.real_node, pytest.mark.timeout(300)]

CRD = "tfjobs.kubeflow.org"
INSTANCE = f"app.kubernetes.io/instance={RELEASE}"
# Every namespace has these from its creation on (kube-controller-manager makes them): they go
# with the namespace, and are nobody's leftovers.
THE_NAMESPACES_OWN = {("ConfigMap", "kube-root-ca.crt"), ("ServiceAccount", "default")}
SKIPPED_KINDS = {
    # Records of what happened, and the Services' own endpoints, which go with them.
    "events", "events.events.k8s.io", "endpoints", "endpointslices.discovery.k8s.io",
    # The node itself, whatever its name.
    "nodes", "csinodes.storage.k8s.io",
}  # fmt: skip

Key = tuple[str, str, str]
"""(kind, namespace, name); the namespace is empty for a cluster-scoped object."""


def _kinds(release: Release, namespaced: bool) -> list[str]:
    listed = release.run(
        [
            "kubectl",
            "api-resources",
            f"--namespaced={'true' if namespaced else 'false'}",
            "--verbs=list",
            "-o",
            "name",
        ]
    ).stdout.split()
    return [kind for kind in listed if kind not in SKIPPED_KINDS]


def _objects(release: Release, *args: str) -> list[dict[str, Any]]:
    answer = json.loads(release.run(["kubectl", "get", *args, "-o", "json"]).stdout)
    return list(answer.get("items") or ())


def _key(item: dict[str, Any]) -> Key:
    meta = item["metadata"]
    return item["kind"], meta.get("namespace", ""), meta["name"]


def release_objects(release: Release) -> set[Key]:
    """Everything in the release namespace (but what every namespace has), every object anywhere
    labelled as the release's, every cluster-scoped object named after it, and the namespace."""
    found: set[Key] = set()
    namespaced = ",".join(_kinds(release, namespaced=True))
    for item in _objects(release, namespaced, "-n", NAMESPACE):
        if (item["kind"], item["metadata"]["name"]) not in THE_NAMESPACES_OWN:
            found.add(_key(item))
    found |= {
        _key(item)
        for item in _objects(release, namespaced, "-A", "-l", f"app.kubernetes.io/instance={RELEASE}")
    }
    for item in _objects(release, ",".join(_kinds(release, namespaced=False))):
        meta = item["metadata"]
        labelled = (meta.get("labels") or {}).get("app.kubernetes.io/instance") == RELEASE
        if labelled or meta["name"].startswith(f"{RELEASE}-") or meta["name"] in (NAMESPACE, CRD):
            found.add(_key(item))
    return found


def uninstall_section() -> str:
    text = DEPLOYMENT_DOC.read_text(encoding="utf-8")
    return text.split("\n## Uninstall\n", 1)[1].split("\n## ", 1)[0]


def test_helm_uninstall_leaves_what_docs_deployment_says(tfgang: Release) -> None:
    # A TFJob of a user's, which must outlive the operator.
    namespace = f"keep-{uuid.uuid4().hex[:6]}"
    tfgang.run(["kubectl", "create", "namespace", namespace])
    job = small_job("kept", namespace, "true", run_policy={"suspend": True})
    apply(tfgang, job)
    installed = release_objects(tfgang)

    tfgang.uninstall()
    until(
        lambda: (
            not _objects(tfgang, "pods", "-n", NAMESPACE, "-l", f"app.kubernetes.io/instance={RELEASE}")
            or None
        ),
        120,
        "the release's pods gone",
    )
    left = release_objects(tfgang)
    assert left <= installed, f"objects that appeared with the uninstall: {left - installed}"

    section = uninstall_section()
    unnamed = sorted(key for key in left if key[2] not in section)
    assert unnamed == [], (
        f"helm uninstall leaves objects docs/deployment.md's Uninstall does not name: {unnamed}"
    )
    assert ("CustomResourceDefinition", "", CRD) in left
    assert _objects(tfgang, "tfjobs", "-n", namespace), "the TFJob went with the operator"

    # The section's further commands remove the rest: all but the CRD and the TFJobs.
    for command in documented_uninstall_commands()[1:]:
        tfgang.run(command, timeout=180)
    remaining = release_objects(tfgang)
    assert remaining == {("CustomResourceDefinition", "", CRD)}, sorted(remaining)
    assert _objects(tfgang, "tfjobs", "-n", namespace)
    tfgang.run(["kubectl", "delete", "namespace", namespace, "--wait=false"], check=False)
