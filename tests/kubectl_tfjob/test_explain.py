"""``kubectl tfjob explain``: offline, what tfgang creates for a TFJob, the same as the operator does."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

import kubectl_tfjob
from kube.schema import UNCHECKED_RULES
from kubectl_tfjob.explain import explain
from tfjob.planner import CreatePod, Observed, plan
from tfjob.settings import Settings
from tfjob.validation import validate_create
from webhook.mutate_pod import PodTarget, mutate_pod

from .plugin import SEED_DIR, plugin, via_kubectl

SEED_PS_TF_CONFIG = (
    '{"cluster":{"ps":["tftest-ps-0.default.svc:2222"],"worker":["tftest-worker-0.default.svc:2222",'
    '"tftest-worker-1.default.svc:2222","tftest-worker-2.default.svc:2222"]},"task":{"type":"ps","index":0},'
    '"environment":"cloud"}'
)


def _container(image: str = "busybox", **extra: Any) -> dict[str, Any]:
    return {"name": "tensorflow", "image": image, **extra}


def _job(name: str = "tj", **specs: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {"tfReplicaSpecs": specs},
    }


def _replica(replicas: int, **pod_spec: Any) -> dict[str, Any]:
    spec = {"containers": [_container(resources={"requests": {"cpu": "1", "memory": "1Gi"}})], **pod_spec}
    return {"replicas": replicas, "template": {"spec": spec}}


def test_seed_job_explained_offline_with_the_seed_podgroup_pods_tf_config_and_services() -> None:
    # No cluster: a kubeconfig that does not exist must not matter to explain.
    result = plugin(
        "explain", "-f", str(SEED_DIR / "normal.yaml"), "-o", "json", env={"KUBECONFIG": "/nonexistent/kc"}
    )
    assert result.returncode == 0, result.stderr
    view = json.loads(result.stdout)
    assert (view["namespace"], view["name"], view["valid"], view["errors"]) == ("default", "tftest", True, [])
    podgroup = view["podGroup"]
    assert podgroup["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert podgroup["spec"]["minMember"] == 4
    assert podgroup["spec"]["queue"] == "default"
    assert podgroup["spec"]["minResources"] == {"cpu": "4", "memory": "400Mi"}
    pods = {pod["name"]: pod for pod in view["pods"]}
    assert sorted(pods) == ["tftest-ps-0", "tftest-worker-0", "tftest-worker-1", "tftest-worker-2"]
    ps = pods["tftest-ps-0"]
    assert ps["tfConfig"] == SEED_PS_TF_CONFIG
    assert ps["annotations"] == {"scheduling.k8s.io/group-name": "tftest", "volcano.sh/task-spec": "ps"}
    assert ps["labels"]["training.kubeflow.org/replica-type"] == "ps"
    assert ps["schedulerName"] == "volcano"
    assert pods["tftest-worker-0"]["labels"]["training.kubeflow.org/job-role"] == "master"
    assert "training.kubeflow.org/job-role" not in pods["tftest-worker-1"]["labels"]
    assert [s["metadata"]["name"] for s in view["services"]] == sorted(pods)
    assert all(s["spec"]["clusterIP"] == "None" for s in view["services"])
    # The defaulted spec: the replica defaults and the run policy's.
    assert view["spec"]["runPolicy"]["cleanPodPolicy"] == "None"
    ports = view["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["ports"]
    assert ports == [{"name": "tfjob-port", "containerPort": 2222}]


def test_text_and_yaml_outputs_carry_the_same_facts() -> None:
    text = plugin("explain", "-f", str(SEED_DIR / "normal.yaml"))
    assert text.returncode == 0, text.stderr
    assert "minMember: 4" in text.stdout
    assert f"TF_CONFIG: {SEED_PS_TF_CONFIG}" in text.stdout
    assert "annotations: scheduling.k8s.io/group-name=tftest, volcano.sh/task-spec=ps" in text.stdout
    as_yaml = plugin("explain", "-f", "-", "-o", "yaml", stdin=(SEED_DIR / "normal.yaml").read_text())
    assert as_yaml.returncode == 0, as_yaml.stderr
    assert yaml.safe_load(as_yaml.stdout)["pods"][0]["tfConfig"] == SEED_PS_TF_CONFIG


def test_an_invalid_job_gets_the_webhooks_errors_and_exit_code_1() -> None:
    job = _job(Chief=_replica(2), Master=_replica(1))
    job["spec"]["tfReplicaSpecs"]["Worker"] = {"replicas": 1, "template": {"spec": {"containers": []}}}
    result = plugin("explain", "-f", "-", "-o", "json", stdin=json.dumps(job))
    assert result.returncode == 1
    view = json.loads(result.stdout)
    assert view["valid"] is False and view["refusedBy"] == "webhook"
    assert view["errors"] == [str(error) for error in validate_create(job)]
    assert any("must be specified" in error for error in view["errors"])
    assert view["pods"] == [] and "podGroup" not in view
    text = plugin("explain", "-f", "-", stdin=json.dumps(job))
    assert text.returncode == 1
    assert "INVALID" in text.stdout and view["errors"][0] in text.stdout


def test_a_job_the_crd_schema_refuses_gets_kube_apiservers_errors_and_exit_code_1() -> None:
    job = _job(Worker=_replica(1))
    job["spec"]["runPolicy"] = {"backoffLimit": "three", "cleanPodPolicy": "Sometimes"}
    result = plugin("explain", "-f", "-", "-o", "json", stdin=json.dumps(job))
    assert result.returncode == 1
    view = json.loads(result.stdout)
    assert view["valid"] is False and view["refusedBy"] == "schema"
    assert view["errors"] == [
        'spec.runPolicy.backoffLimit: Invalid value: "string": spec.runPolicy.backoffLimit in body must be '
        'of type integer: "string"',
        'spec.runPolicy.cleanPodPolicy: Unsupported value: "Sometimes": supported values: "None", "Running", '
        '"All"',
        # The CRD has a CEL rule (the queue's immutability), which kube-apiserver leaves unchecked.
        f"<nil>: Invalid value: null: {UNCHECKED_RULES}",
    ]
    text = plugin("explain", "-f", "-", stdin=json.dumps(job))
    assert text.returncode == 1
    assert "INVALID" in text.stdout and "the TFJob CRD's schema" in text.stdout
    assert view["errors"][1] in text.stdout


@pytest.mark.parametrize("replica_specs", [{}, {"Worker": None}], ids=["empty", "null-worker"])
def test_a_job_without_replicas_is_refused_as_the_cluster_refuses_it(replica_specs: dict[str, Any]) -> None:
    """Issue 27: kube-apiserver drops the null spec, then the schema's minProperties refuses the job
    (showing the count, 0; v1.20 showed the minimum, 1)."""
    job = _job()
    job["spec"]["tfReplicaSpecs"] = replica_specs
    view = explain(job, Settings())  # type: ignore[arg-type]
    assert view["valid"] is False and view.get("refusedBy") == "schema"
    assert view["errors"] == [
        "spec.tfReplicaSpecs: Invalid value: 0: spec.tfReplicaSpecs in body should have at least 1 properties"
    ]


def test_unknown_fields_are_dropped_and_nulls_ignored_as_kube_apiserver_does() -> None:
    job = _job(Worker=_replica(2), Evaluator=None)  # type: ignore[arg-type]
    job["spec"]["surprise"] = True
    job["spec"]["runPolicy"] = {"backoffLimit": None}
    view = explain(job, Settings())  # type: ignore[arg-type]
    assert view["valid"], view["errors"]
    assert "surprise" not in view["spec"] and "Evaluator" not in view["spec"]["tfReplicaSpecs"]
    assert "backoffLimit" not in view["spec"]["runPolicy"]
    assert view["spec"]["runPolicy"]["suspend"] is False  # the CRD's default
    assert any("spec.surprise" in note for note in view["notes"])
    assert [pod["name"] for pod in view["pods"]] == ["tj-worker-0", "tj-worker-1"]


def test_the_plugin_ships_the_charts_crd() -> None:
    """explain reads the CRD from its package (the image has no chart): it must be the chart's."""
    shipped = Path(kubectl_tfjob.__file__).parent / "kubeflow.org_tfjobs.yaml"
    chart = (
        Path(kubectl_tfjob.__file__).parents[1] / "charts" / "tfgang" / "crds" / "kubeflow.org_tfjobs.yaml"
    )
    assert shipped.read_bytes() == chart.read_bytes(), f"copy {chart} to {shipped}"


def test_a_job_managed_elsewhere_is_left_alone_and_a_suspended_one_shows_what_resuming_creates() -> None:
    other = _job(Worker=_replica(2))
    other["spec"]["runPolicy"] = {"managedBy": "kueue.x-k8s.io/multikueue"}
    view = explain(other, Settings())
    assert view["valid"] and view["pods"] == [] and "podGroup" not in view
    assert "leaves this job alone" in view["notes"][0]
    suspended = _job(Worker=_replica(2))
    suspended["spec"]["runPolicy"] = {"suspend": True}
    view = explain(suspended, Settings())
    assert [pod["name"] for pod in view["pods"]] == ["tj-worker-0", "tj-worker-1"]
    assert "resumed" in view["notes"][0]


def test_bad_files_are_refused_with_a_clear_error() -> None:
    cases = {
        "not: [yaml": "not YAML or JSON",
        "apiVersion: v1\nkind: Pod\n": "expected TFJob documents, found 'Pod'",
        "": "no TFJob in the file",
    }
    for text, message in cases.items():
        result = plugin("explain", "-f", "-", stdin=text)
        assert result.returncode == 1 and message in result.stderr, (text, result.stderr)
    missing = plugin("explain", "-f", "/nonexistent/job.yaml")
    assert missing.returncode == 1 and "No such file" in missing.stderr
    huge = plugin("explain", "-f", "-", stdin="#" * (5 * 1024 * 1024))
    assert huge.returncode == 1 and "larger than" in huge.stderr


# -- the same decisions as the operator ---------------------------------------------------------------

JOBS = {
    "ps-worker": _job(PS=_replica(2), Worker=_replica(3)),
    "chief-evaluator": _job(Chief=_replica(1), Worker=_replica(2), Evaluator=_replica(1)),
    "single": _job(Worker=_replica(1)),
    "template-scheduler": _job(Worker=_replica(2, schedulerName="my-scheduler"), PS=_replica(1)),
    "dynamic": {
        **_job(PS=_replica(1), Worker=_replica(2)),
        "spec": {"enableDynamicWorker": True, "tfReplicaSpecs": {"PS": _replica(1), "Worker": _replica(2)}},
    },
    "lowercase-keys": _job(ps=_replica(1), worker=_replica(2)),
}
SETTINGS = {
    "volcano": Settings(),
    "scheduler-plugins": Settings(gang_scheduler_name="scheduler-plugins-scheduler"),
    "no-gang": Settings(gang_scheduler_name=""),
    "cluster-domain": Settings(cluster_domain="cluster.local"),
}


def _controllers_pods(job: dict[str, Any], settings: Settings) -> list[dict[str, Any]]:
    """What the controller creates once the PodGroup is admitted: its planner, run independently."""
    from datetime import UTC, datetime

    now = datetime(2026, 12, 1, tzinfo=UTC)
    podgroup = {"metadata": {"name": job["metadata"]["name"]}, "status": {"phase": "Running"}}
    result = plan(Observed(job=job, podgroup=podgroup if settings.gang_enabled else None), now, settings)  # type: ignore[arg-type]
    return [a.pod for a in result.actions if isinstance(a, CreatePod)]


def _admitted_by_the_webhook(pod: dict[str, Any], job: dict[str, Any], settings: Settings) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["spec"].setdefault("schedulerName", "default-scheduler")  # the API server's default
    target = PodTarget(namespace="ns", job_name=job["metadata"]["name"], pod=pod)
    decision = mutate_pod(target, job, settings)  # type: ignore[arg-type]
    assert decision.allowed, decision.message
    return jsonpatch.apply_patch(pod, list(decision.patch))  # type: ignore[no-any-return]


def _tf_config(pod: dict[str, Any]) -> str | None:
    env = pod["spec"]["containers"][0].get("env") or []
    return next((e["value"] for e in env if e["name"] == "TF_CONFIG"), None)


@pytest.mark.parametrize("settings_name", sorted(SETTINGS))
@pytest.mark.parametrize("job_name", sorted(JOBS))
def test_explain_shows_exactly_what_the_controller_creates_and_the_webhook_adds(
    job_name: str, settings_name: str
) -> None:
    job, settings = JOBS[job_name], SETTINGS[settings_name]
    view = explain(job, settings)  # type: ignore[arg-type]
    assert view["valid"], view["errors"]
    expected = {
        pod["metadata"]["name"]: _admitted_by_the_webhook(pod, job, settings)
        for pod in _controllers_pods(job, settings)
    }
    assert expected, "the controller creates pods for every fixture job"
    assert sorted(pod["name"] for pod in view["pods"]) == sorted(expected)
    for shown in view["pods"]:
        admitted = expected[shown["name"]]
        assert shown["labels"] == admitted["metadata"]["labels"]
        assert shown["annotations"] == admitted["metadata"].get("annotations", {})
        assert shown["schedulerName"] == admitted["spec"]["schedulerName"]
        assert shown["restartPolicy"] == admitted["spec"]["restartPolicy"]
        assert shown["tfConfig"] == _tf_config(admitted)
    assert ("podGroup" in view) == settings.gang_enabled


def test_a_users_own_tf_config_is_kept_with_a_warning_as_the_webhook_does() -> None:
    job = _job(PS=_replica(1), Worker=_replica(1))
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "TF_CONFIG", "value": "{}"}
    ]
    view = explain(job, Settings())  # type: ignore[arg-type]
    worker = next(pod for pod in view["pods"] if pod["replicaType"] == "Worker")
    assert worker["tfConfig"] == "{}"
    assert worker["warnings"]
    (pod,) = [p for p in _controllers_pods(job, Settings()) if p["metadata"]["name"] == "tj-worker-0"]
    target = PodTarget(namespace="ns", job_name="tj", pod=pod)
    assert mutate_pod(target, job, Settings()).warnings  # type: ignore[arg-type]


# -- help and discovery --------------------------------------------------------------------------------


@pytest.mark.parametrize("subcommand", [(), ("explain",), ("status",), ("logs",)])
def test_every_subcommand_has_help_through_kubectl_plugin_discovery(subcommand: tuple[str, ...]) -> None:
    result = via_kubectl(*subcommand, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: kubectl tfjob")
    for flag in ("--kubeconfig", "--context", "--namespace", "--output"):
        assert flag in result.stdout


def test_kubectl_lists_the_plugin() -> None:
    result = via_kubectl("explain", "-f", str(SEED_DIR / "normal.yaml"), "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["podGroup"]["spec"]["minMember"] == 4


def test_priority_class_values_order_min_resources_as_the_controller_looks_them_up() -> None:
    job = _job(PS=_replica(1, priorityClassName="low"), Worker=_replica(2, priorityClassName="high"))
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "2"}
    }
    job["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": 2}}
    unknown = plugin("explain", "-f", "-", "-o", "json", stdin=json.dumps(job))
    assert unknown.returncode == 0, unknown.stderr
    # Every class counts as 0: the type order (PS before Worker) decides: one PS and one worker.
    assert json.loads(unknown.stdout)["podGroup"]["spec"]["minResources"] == {"cpu": "3", "memory": "1Gi"}
    known = plugin(
        "explain",
        "-f",
        "-",
        "-o",
        "json",
        "--priority-class",
        "high=1000",
        "--priority-class",
        "low=1",
        stdin=json.dumps(job),
    )
    assert known.returncode == 0, known.stderr
    assert json.loads(known.stdout)["podGroup"]["spec"]["minResources"] == {"cpu": "4"}
    bad = plugin("explain", "-f", "-", "--priority-class", "high", stdin=json.dumps(job))
    assert bad.returncode == 2 and "expected NAME=VALUE" in bad.stderr
