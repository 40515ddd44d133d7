"""The chart renders the objects the design promises, with the labels, probes and security it claims."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .render import (
    find_object,
    find_objects,
    is_test_hook,
    load_chart,
    render_chart,
    render_manifests,
)
from .scenarios import SCENARIOS

NAMESPACE = "tfgang"
RECOMMENDED_LABELS = (
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/component",
    "app.kubernetes.io/part-of",
    "app.kubernetes.io/managed-by",
    "helm.sh/chart",
)


def _container(deployment: dict[str, object], name: str) -> dict[str, object]:
    containers = deployment["spec"]["template"]["spec"]["containers"]  # type: ignore[index]
    return next(c for c in containers if c["name"] == name)


def _env(container: dict[str, object]) -> dict[str, object]:
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container["env"]}  # type: ignore[attr-defined]


def ci_kubernetes_minor() -> str:
    """The minor of the real kube-apiserver CI tests on: the one scripts/kube-apiserver builds."""
    script = (Path(__file__).resolve().parents[2] / "scripts" / "kube-apiserver").read_text()
    match = re.search(r'^KUBE_DEB_VERSION="[^"]*really(\d+\.\d+)\.\d+', script, re.MULTILINE)
    assert match, "scripts/kube-apiserver names no Kubernetes version"
    return match.group(1)


def test_chart_metadata_declares_a_v2_application_with_a_kube_version_range() -> None:
    metadata = load_chart().metadata
    assert metadata["apiVersion"] == "v2"
    assert metadata["type"] == "application"
    assert metadata["kubeVersion"].startswith(f">={ci_kubernetes_minor()}.0")
    assert metadata["appVersion"]


def test_defaults_render_both_components_and_their_plumbing() -> None:
    objects = render_chart(include_tests=False)
    kinds = sorted({(o["kind"], o["metadata"]["name"]) for o in objects})
    assert ("Deployment", "tfgang-webhook") in kinds
    assert ("Deployment", "tfgang-controller") in kinds
    assert ("Service", "tfgang-webhook") in kinds
    assert ("Service", "tfgang-webhook-metrics") in kinds
    assert ("Service", "tfgang-controller-metrics") in kinds
    assert ("ServiceAccount", "tfgang-webhook") in kinds
    assert ("ServiceAccount", "tfgang-controller") in kinds
    assert ("PodDisruptionBudget", "tfgang-webhook") in kinds
    assert ("MutatingWebhookConfiguration", "tfgang-mutating") in kinds
    assert ("ValidatingWebhookConfiguration", "tfgang-validating") in kinds
    # selfManaged by default: no chart-made certificate material, no cert-manager objects
    assert not find_objects(objects, "Secret")
    assert not find_objects(objects, "Certificate")
    assert not find_objects(objects, "ServiceMonitor")


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_object_carries_the_recommended_labels(scenario: str) -> None:
    for obj in render_chart(SCENARIOS[scenario]):
        labels = obj["metadata"].get("labels", {})
        missing = [key for key in RECOMMENDED_LABELS if key not in labels]
        assert not missing, f"{obj['kind']}/{obj['metadata']['name']} lacks {missing}"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["app.kubernetes.io/instance"] == "tfgang"


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_namespaced_objects_live_in_the_release_or_watched_namespace(scenario: str) -> None:
    values = SCENARIOS[scenario]
    allowed = {NAMESPACE, *values.get("watchNamespaces", []), "default"}
    for obj in render_chart(values, namespace=NAMESPACE):
        namespace = obj["metadata"].get("namespace")
        if obj["kind"] in {
            "ClusterRole",
            "ClusterRoleBinding",
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        }:
            assert namespace is None
        else:
            assert namespace in allowed, f"{obj['kind']}/{obj['metadata']['name']} in {namespace}"


def test_selectors_match_pod_labels_and_separate_the_components() -> None:
    objects = render_chart()
    for name in ("tfgang-webhook", "tfgang-controller"):
        deployment = find_object(objects, "Deployment", name)
        selector = deployment["spec"]["selector"]["matchLabels"]
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= pod_labels.items()
        assert "app.kubernetes.io/version" not in selector  # selectors are immutable: no version
    webhook_selector = find_object(objects, "Deployment", "tfgang-webhook")["spec"]["selector"]["matchLabels"]
    service = find_object(objects, "Service", "tfgang-webhook")
    assert service["spec"]["selector"] == webhook_selector
    assert webhook_selector["app.kubernetes.io/component"] == "webhook"


def test_webhook_deployment_is_highly_available_and_every_replica_serves() -> None:
    objects = render_chart()
    deployment = find_object(objects, "Deployment", "tfgang-webhook")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    anti = spec["template"]["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert anti[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    pdb = find_object(objects, "PodDisruptionBudget", "tfgang-webhook")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == spec["selector"]["matchLabels"]
    container = _container(deployment, "webhook")
    assert container["command"] == ["tfgang-webhook"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}  # type: ignore[attr-defined]
    assert ports == {"https": 9443, "ops": 8081}
    env = _env(container)
    # a terminating replica stays up, unready, until endpoints stop routing to it
    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > int(
        str(env["TFGANG_SHUTDOWN_DELAY"])
    )
    assert env["TFGANG_CERT_DIR"] == "/var/run/tfgang/certs"
    assert env["TFGANG_PORT"] == "9443"
    assert env["TFGANG_OPS_PORT"] == "8081"


def test_webhook_service_maps_443_to_the_serving_port() -> None:
    service = find_object(render_chart(), "Service", "tfgang-webhook")
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}
    ]


def test_controller_runs_two_leader_elected_replicas_with_a_lease_in_the_release_namespace() -> None:
    deployment = find_object(render_chart(), "Deployment", "tfgang-controller")
    assert deployment["spec"]["replicas"] == 2
    container = _container(deployment, "controller")
    assert container["command"] == ["tfgang-controller"]
    env = _env(container)
    assert env["TFGANG_LEADER_ELECT"] == "true"
    assert env["TFGANG_LEASE_NAMESPACE"] == NAMESPACE
    assert env["TFGANG_LEASE_NAME"] == "1ca428e5.training-operator.kubeflow.org"
    assert env["TFGANG_OPS_PORT"] == "8082"
    assert env["TFGANG_NAMESPACE"] == ""
    assert env["TFGANG_GANG_SCHEDULER_NAME"] == "volcano"


def test_leader_election_off_drops_the_lease_role_and_a_single_webhook_gets_no_pdb() -> None:
    objects = render_chart(SCENARIOS["minimal"])
    assert not find_objects(objects, "Role", "tfgang-controller-leader-election")
    env = _env(_container(find_object(objects, "Deployment", "tfgang-controller"), "controller"))
    assert env["TFGANG_LEADER_ELECT"] == "false"
    assert "TFGANG_LEASE_NAME" not in env
    assert not find_objects(objects, "PodDisruptionBudget")
    assert not [o for o in objects if o["kind"] == "Service" and o["metadata"]["name"].endswith("-metrics")]
    assert not [o for o in objects if is_test_hook(o)]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_pod_is_locked_down_and_probed(scenario: str) -> None:
    objects = render_chart(SCENARIOS[scenario])
    pod_specs = [d["spec"]["template"]["spec"] for d in find_objects(objects, "Deployment")]
    pod_specs += [p["spec"] for p in find_objects(objects, "Pod")]
    assert pod_specs
    for pod_spec in pod_specs:
        assert pod_spec["securityContext"]["runAsNonRoot"] is True
        assert pod_spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in pod_spec["containers"]:
            security = container["securityContext"]
            assert security["runAsNonRoot"] is True
            assert security["readOnlyRootFilesystem"] is True
            assert security["allowPrivilegeEscalation"] is False
            assert security["capabilities"]["drop"] == ["ALL"]
            assert security["seccompProfile"] == {"type": "RuntimeDefault"}
            assert container["resources"]["requests"]
            assert container["resources"]["limits"]["memory"]
    for deployment in find_objects(objects, "Deployment"):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
                assert container[probe]["httpGet"] == {"path": path, "port": "ops"}


def test_scheduling_knobs_reach_the_pods() -> None:
    objects = render_chart(SCENARIOS["everything-on"])
    webhook = find_object(objects, "Deployment", "tfgang-webhook")
    pod = webhook["spec"]["template"]["spec"]
    assert webhook["spec"]["replicas"] == 3
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["tolerations"][0]["key"] == "dedicated"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert "requiredDuringSchedulingIgnoredDuringExecution" in pod["affinity"]["podAntiAffinity"]
    assert _container(webhook, "webhook")["image"] == "example/tfgang@sha256:" + "a" * 64
    assert find_object(objects, "PodDisruptionBudget")["spec"]["minAvailable"] == "50%"
    controller = find_object(objects, "Deployment", "tfgang-controller")["spec"]["template"]["spec"]
    assert "affinity" not in controller
    assert all(o["metadata"]["labels"]["team"] == "ml-platform" for o in objects)


def test_user_affinity_replaces_the_generated_anti_affinity() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["system"]}]}
                ]
            }
        }
    }
    objects = render_chart({"webhook": {"affinity": affinity}})
    pod = find_object(objects, "Deployment", "tfgang-webhook")["spec"]["template"]["spec"]
    assert pod["affinity"] == affinity


def test_image_defaults_to_the_app_version() -> None:
    deployment = find_object(render_chart(), "Deployment", "tfgang-controller")
    assert _container(deployment, "controller")["image"] == f"tfgang:{load_chart().metadata['appVersion']}"


def test_metrics_services_target_each_components_ops_port_and_the_service_monitor_selects_both() -> None:
    objects = render_chart(SCENARIOS["everything-on"])
    monitor = find_object(objects, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    for component in ("webhook", "controller"):
        service = find_object(objects, "Service", f"tfgang-{component}-metrics")
        assert service["spec"]["ports"][0]["targetPort"] == "ops"
        assert service["spec"]["ports"][0]["name"] == monitor["spec"]["endpoints"][0]["port"]
        assert service["spec"]["selector"]["app.kubernetes.io/component"] == component
        assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    webhook_service = find_object(objects, "Service", "tfgang-webhook")
    assert (
        not monitor["spec"]["selector"]["matchLabels"].items()
        <= webhook_service["metadata"]["labels"].items()
    )


def test_helm_test_hook_dry_run_creates_a_tfjob_with_a_service_account_allowed_to() -> None:
    objects = render_chart()
    hooks = [o for o in objects if is_test_hook(o)]
    pod = find_object(hooks, "Pod")
    container = pod["spec"]["containers"][0]
    assert container["command"][:3] == ["kubectl", "create", "--dry-run=server"]
    manifest_path = container["command"][container["command"].index("-f") + 1]
    config_map = find_object(hooks, "ConfigMap")
    mount = next(m for m in container["volumeMounts"] if manifest_path.startswith(m["mountPath"]))
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == mount["name"])
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    assert manifest_path.rsplit("/", 1)[1] in config_map["data"]
    role = find_object(hooks, "Role")
    binding = find_object(hooks, "RoleBinding")
    # the TFJob goes to a namespace the webhooks match, never the excluded release namespace
    assert role["metadata"]["namespace"] == "default"
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": pod["spec"]["serviceAccountName"], "namespace": NAMESPACE}
    ]
    assert role["rules"] == [{"apiGroups": ["kubeflow.org"], "resources": ["tfjobs"], "verbs": ["create"]}]
    for hook in hooks:
        assert "hook-succeeded" in hook["metadata"]["annotations"]["helm.sh/hook-delete-policy"]


def test_namespace_scoped_helm_test_targets_the_watched_namespace() -> None:
    hooks = [o for o in render_chart(SCENARIOS["namespace-scoped"]) if is_test_hook(o)]
    assert find_object(hooks, "Role")["metadata"]["namespace"] == "team-a"


def test_notes_explain_the_scope_and_the_certificate_mode() -> None:
    notes = render_manifests()["tfgang/templates/NOTES.txt"]
    assert "every namespace except kube-system, tfgang" in notes
    assert "Certificates: selfManaged" in notes
    assert "helm test tfgang -n tfgang" in notes
    scoped = render_manifests(SCENARIOS["namespace-scoped"])["tfgang/templates/NOTES.txt"]
    assert "namespace team-a only" in scoped


def test_notes_warn_about_a_single_webhook_replica_that_fails_closed() -> None:
    assert "WARNING" not in render_manifests()["tfgang/templates/NOTES.txt"]
    single = render_manifests({"webhook": {"replicas": 1}})["tfgang/templates/NOTES.txt"]
    assert "WARNING: one webhook replica with failurePolicy Fail" in single
    ignoring = render_manifests({"webhook": {"replicas": 1, "failurePolicy": "Ignore"}})
    assert "WARNING" not in ignoring["tfgang/templates/NOTES.txt"]


def test_long_release_names_keep_every_name_a_valid_dns_label() -> None:
    objects = render_chart(release_name="a-very-long-release-name-for-the-tfgang-operator-xy")
    for obj in objects:
        name = obj["metadata"]["name"]
        if obj["kind"] in {"Service", "Deployment", "ServiceAccount"}:
            assert len(name) <= 63, name
        assert not name.endswith("-")
