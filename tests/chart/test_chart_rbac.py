"""Least-privilege RBAC: exactly the verbs the code uses, in both scopes, and docs/rbac.md agrees."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .rbac import Grant, allows, granted
from .render import find_objects, render_chart
from .scenarios import SCENARIOS

NAMESPACE = "tfgang"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "rbac.md"

LEASE = "1ca428e5.training-operator.kubeflow.org"


def _controller_grants(where: str, podgroup_group: str | None = "scheduling.volcano.sh") -> set[Grant]:
    namespaced = {
        ("kubeflow.org", "tfjobs", "list watch delete"),
        ("kubeflow.org", "tfjobs/status", "patch"),
        ("", "pods", "get list watch create delete"),
        ("", "services", "get list watch create delete"),
        # under Volcano, its Unschedulable events on PodGroups are watched too
        ("", "events", "create patch" + (" list watch" if podgroup_group == "scheduling.volcano.sh" else "")),
    }
    if podgroup_group is not None:
        namespaced.add((podgroup_group, "podgroups", "get list watch create patch delete"))
    grants = {
        Grant(where, group, resource, verb, "")
        for group, resource, verbs in namespaced
        for verb in verbs.split()
    }
    grants |= {
        Grant("*", "scheduling.k8s.io", "priorityclasses", verb, "") for verb in ("list", "watch")
    }
    # the scope's selector is matched against namespace labels (controller.scope)
    grants |= {Grant("*", "", "namespaces", verb, "") for verb in ("list", "watch")}
    grants |= {
        Grant(NAMESPACE, "coordination.k8s.io", "leases", "create", ""),
        Grant(NAMESPACE, "coordination.k8s.io", "leases", "get", LEASE),
        Grant(NAMESPACE, "coordination.k8s.io", "leases", "update", LEASE),
    }
    return grants


def _webhook_grants(where: str, self_managed: bool) -> set[Grant]:
    grants = {Grant(where, "kubeflow.org", "tfjobs", verb, "") for verb in ("get", "list", "watch")}
    if self_managed:
        grants |= {
            Grant(NAMESPACE, "", "secrets", "create", ""),
            Grant(NAMESPACE, "", "secrets", "get", "tfgang-webhook-tls"),
            Grant(NAMESPACE, "", "secrets", "update", "tfgang-webhook-tls"),
        }
        for kind in ("mutating", "validating"):
            grants |= {
                Grant(
                    "*",
                    "admissionregistration.k8s.io",
                    f"{kind}webhookconfigurations",
                    verb,
                    f"tfgang-{kind}",
                )
                for verb in ("get", "update")
            }
    return grants


@pytest.mark.parametrize(
    ("scenario", "where", "self_managed"),
    [
        ("defaults", "*", True),
        ("cert-manager", "*", False),
        ("user-secret", "*", False),
        ("namespace-scoped", "team-a", True),
    ],
)
def test_each_component_gets_exactly_the_permissions_its_code_uses(
    scenario: str, where: str, self_managed: bool
) -> None:
    objects = render_chart(SCENARIOS[scenario], NAMESPACE)
    assert granted(objects, "tfgang-controller") == _controller_grants(where)
    assert granted(objects, "tfgang-webhook") == _webhook_grants(where, self_managed)


@pytest.mark.parametrize(
    ("scheduler", "podgroup_group"),
    [
        ("volcano", "scheduling.volcano.sh"),
        ("Volcano", "scheduling.volcano.sh"),
        ("scheduler-plugins-scheduler", "scheduling.x-k8s.io"),
        ("", None),
    ],
)
def test_podgroup_permissions_follow_the_gang_scheduler(scheduler: str, podgroup_group: str | None) -> None:
    objects = render_chart({"gangSchedulerName": scheduler}, NAMESPACE)
    assert granted(objects, "tfgang-controller") == _controller_grants("*", podgroup_group)


def test_no_rule_uses_wildcards_or_escalating_verbs() -> None:
    for scenario in SCENARIOS.values():
        for role in render_chart(scenario, NAMESPACE):
            for rule in role.get("rules", []):
                for field in ("apiGroups", "resources", "verbs"):
                    assert "*" not in rule[field]
                assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"])


def test_namespace_scoped_mode_binds_only_roles_in_the_watched_namespace_apart_from_cluster_reads() -> None:
    objects = render_chart(SCENARIOS["namespace-scoped"], NAMESPACE)
    for account in ("tfgang-controller", "tfgang-webhook"):
        cluster_wide = {grant for grant in granted(objects, account) if grant[0] == "*"}
        assert {resource for _, _, resource, _, _ in cluster_wide} <= {
            "priorityclasses",
            "namespaces",  # their labels, matched by the scope's selector
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
        }
    env = {
        e["name"]: e.get("value")
        for d in find_objects(objects, "Deployment")
        for c in d["spec"]["template"]["spec"]["containers"]
        for e in c["env"]
    }
    assert env["TFGANG_NAMESPACE"] == "team-a"


def test_service_accounts_can_be_brought_by_the_user() -> None:
    values = {"controller": {"serviceAccount": {"create": False, "name": "ops-controller"}}}
    objects = render_chart(values, NAMESPACE)
    assert not find_objects(objects, "ServiceAccount", "tfgang-controller")
    assert granted(objects, "ops-controller") == _controller_grants("*")


def _documented_grants() -> set[tuple[str, str, str, str]]:
    """(component, apiGroup, resource, verb) rows of the permission tables in docs/rbac.md."""
    rows: set[tuple[str, str, str, str]] = set()
    pattern = re.compile(
        r"^\|\s*(controller|webhook)\s*\|\s*`([^`]*)`\s*\|\s*`([^`]+)`\s*\|\s*([a-z, ]+?)\s*\|"
    )
    for line in DOCS.read_text().splitlines():
        match = pattern.match(line)
        if match:
            component, group, resource, verbs = match.groups()
            group = "" if group == "core" else group
            rows |= {(component, group, resource, verb.strip()) for verb in verbs.split(",")}
    return rows


def test_docs_list_exactly_the_rendered_permissions() -> None:
    objects = render_chart(None, NAMESPACE)
    rendered = {
        (component, group, resource, verb)
        for component in ("controller", "webhook")
        for _, group, resource, verb, _ in granted(objects, f"tfgang-{component}")
    }
    assert _documented_grants() == rendered


def test_allows_decides_like_rbac() -> None:
    objects = render_chart(SCENARIOS["namespace-scoped"], NAMESPACE)
    controller = granted(objects, "tfgang-controller")
    webhook = granted(objects, "tfgang-webhook")
    pods = {"group": "", "resource": "pods", "name": "job-worker-0"}
    assert allows(controller, verb="create", namespace="team-a", **pods)
    assert not allows(controller, verb="create", namespace="team-b", **pods)
    assert not allows(controller, verb="list", namespace="", **pods)  # no cluster-wide list here
    assert not allows(controller, verb="patch", namespace="team-a", **pods)
    lease = {"group": "coordination.k8s.io", "resource": "leases", "namespace": NAMESPACE}
    assert allows(controller, verb="update", name=LEASE, **lease)
    assert not allows(controller, verb="update", name="another-lease", **lease)
    assert allows(controller, verb="create", name="", **lease)
    secret = {"group": "", "resource": "secrets", "namespace": NAMESPACE}
    assert allows(webhook, verb="get", name="tfgang-webhook-tls", **secret)
    assert not allows(webhook, verb="get", name="someone-elses", **secret)
    priority_classes = {
        "group": "scheduling.k8s.io",
        "resource": "priorityclasses",
        "namespace": "",
        "name": "",
    }
    assert allows(controller, verb="list", **priority_classes)
    assert not allows(controller, verb="get", **priority_classes)
