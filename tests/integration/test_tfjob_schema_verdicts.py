"""One rule book: the same TFJobs sent to the API server (the sandbox's, a real kube-apiserver v1.20
and v1.37, each with the real validating webhook registered) and to ``kubectl tfjob explain`` get
the same verdict from all of them.

Each case exercises one rule and says who decides it: ``ACCEPTED``; ``SCHEMA`` (the TFJob CRD's
openAPIV3Schema, which kube-apiserver checks after pruning unknown fields, dropping nulls and
defaulting, before any validating webhook); or ``WEBHOOK`` (tfgang's validating webhook, for what
a schema cannot say). The server's verdict is read from a server-side dry-run create, which runs
the schema and the webhook but stores nothing. For accepted jobs the object the server would store
is also compared with what ``kube.schema`` makes of the job (pruned, nulls dropped, defaulted).
A schema refusal's words are explain's (the current release's) on the sandbox and v1.37, and
``kube.schema``'s for v1.20 on v1.20 (list items named without their index, no ``[0]``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Final

import pytest
import yaml
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.client.exceptions import ApiException

from kube.schema import CURRENT, Release, StructuralSchema
from kubectl_tfjob.explain import tfjob_schema
from tests.kubectl_tfjob.plugin import SEED_DIR, plugin

from .cluster import Cluster

ACCEPTED: Final = "accepted"
SCHEMA: Final = "schema"
WEBHOOK: Final = "webhook"
WEBHOOK_DENIAL = 'admission webhook "validate-tfjobs.tfgang.kubeflow.org" denied the request'

Job = dict[str, Any]


def seed(name: str) -> Job:
    job: Job = yaml.safe_load((SEED_DIR / f"{name}.yaml").read_text())
    return job


def base() -> Job:
    """A small valid job: two workers and a PS."""

    def replica(replicas: int) -> dict[str, Any]:
        container = {
            "name": "tensorflow",
            "image": "busybox",
            "ports": [{"name": "tfjob-port", "containerPort": 2222}],
        }
        return {
            "replicas": replicas,
            "restartPolicy": "Never",
            "template": {"spec": {"containers": [container]}},
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "tj"},
        "spec": {"tfReplicaSpecs": {"PS": replica(1), "Worker": replica(2)}},
    }


def setting(path: str, value: Any) -> Callable[[Job], None]:
    """A change to the base job: ``value`` at the dotted ``path`` (``~`` deletes the field)."""

    def change(job: Job) -> None:
        *parents, last = path.split(".")
        target: Any = job
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
        if value == "~":
            del target[last]
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return change


WORKER = "spec.tfReplicaSpecs.Worker"
CONTAINER = f"{WORKER}.template.spec.containers.0"
RUN_POLICY = "spec.runPolicy"


@dataclass(frozen=True)
class Case:
    name: str
    verdict: str
    changes: tuple[Callable[[Job], None], ...] = ()
    job: Callable[[], Job] = base

    def build(self) -> Job:
        job = copy.deepcopy(self.job())
        job["metadata"] = {"name": self.name}
        for change in self.changes:
            change(job)
        return job


def case(name: str, verdict: str, *changes: Callable[[Job], None], job: Callable[[], Job] = base) -> Case:
    return Case(name, verdict, changes, job)


CASES: Final = [
    # --- accepted: the seed, and what kube-apiserver makes acceptable by pruning, nulls and defaults ---
    case("seed-normal", ACCEPTED, job=lambda: seed("normal")),
    case("seed-ps-failure", ACCEPTED, job=lambda: seed("ps-failure")),
    case("seed-worker-failure", ACCEPTED, job=lambda: seed("worker-failure")),
    case("base", ACCEPTED),
    case("unknown-spec-field-pruned", ACCEPTED, setting("spec.surprise", {"a": 1})),
    case("unknown-replica-field-pruned", ACCEPTED, setting(f"{WORKER}.surprise", True)),
    case("unknown-run-policy-field-pruned", ACCEPTED, setting(f"{RUN_POLICY}.surprise", 3)),
    case("pod-spec-fields-kept", ACCEPTED, setting(f"{WORKER}.template.spec.nodeSelector", {"gpu": "yes"})),
    case("null-evaluator-dropped", ACCEPTED, setting("spec.tfReplicaSpecs.Evaluator", None)),
    case("null-success-policy-dropped", ACCEPTED, setting("spec.successPolicy", None)),
    case("null-suspend-defaulted", ACCEPTED, setting(f"{RUN_POLICY}.suspend", None)),
    case("null-replicas-dropped", ACCEPTED, setting(f"{WORKER}.replicas", None)),
    case(
        "null-creation-timestamp-kept",
        ACCEPTED,
        setting(f"{WORKER}.template.metadata.creationTimestamp", None),
    ),
    case(
        "int-or-string-resources",
        ACCEPTED,
        setting(
            f"{CONTAINER}.resources", {"limits": {"cpu": 2, "memory": "1Gi"}, "requests": {"cpu": "500m"}}
        ),
    ),
    case(
        "int-or-string-min-resources",
        ACCEPTED,
        setting(f"{RUN_POLICY}.schedulingPolicy.minResources", {"cpu": 4, "memory": "8Gi"}),
    ),
    case("empty-restart-policy", ACCEPTED, setting(f"{WORKER}.restartPolicy", "")),
    case("exit-code-restart-policy", ACCEPTED, setting(f"{WORKER}.restartPolicy", "ExitCode")),
    case("zero-replicas", ACCEPTED, setting("spec.tfReplicaSpecs.PS.replicas", 0)),
    case("clean-pod-policy-all", ACCEPTED, setting(f"{RUN_POLICY}.cleanPodPolicy", "All")),
    case("success-policy-all-workers", ACCEPTED, setting("spec.successPolicy", "AllWorkers")),
    case(
        "managed-by-training-operator",
        ACCEPTED,
        setting(f"{RUN_POLICY}.managedBy", "kubeflow.org/training-operator"),
    ),
    case(
        "lowercase-replica-keys",
        ACCEPTED,
        setting("spec.tfReplicaSpecs", {"worker": base()["spec"]["tfReplicaSpecs"]["Worker"]}),
    ),
    case("status-ignored-on-create", ACCEPTED, setting("status", {"conditions": "not a list"})),
    case(
        "run-policy-numbers",
        ACCEPTED,
        setting(RUN_POLICY, {"backoffLimit": 3, "activeDeadlineSeconds": 600, "ttlSecondsAfterFinished": 60}),
    ),
    # --- refused by the CRD's schema ---
    case("no-replica-specs", SCHEMA, setting("spec.tfReplicaSpecs", {})),
    case("null-worker-only", SCHEMA, setting("spec.tfReplicaSpecs", {"Worker": None})),
    case("replica-specs-missing", SCHEMA, setting("spec.tfReplicaSpecs", "~")),
    case("replica-specs-a-list", SCHEMA, setting("spec.tfReplicaSpecs", ["Worker"])),
    case("replica-spec-a-string", SCHEMA, setting(WORKER, "two workers")),
    case("replicas-a-string", SCHEMA, setting(f"{WORKER}.replicas", "2")),
    case("replicas-negative", SCHEMA, setting(f"{WORKER}.replicas", -1)),
    case("replicas-fractional", SCHEMA, setting(f"{WORKER}.replicas", 1.5)),
    case("restart-policy-unknown", SCHEMA, setting(f"{WORKER}.restartPolicy", "Sometimes")),
    case("restart-policy-a-number", SCHEMA, setting(f"{WORKER}.restartPolicy", 1)),
    case("success-policy-unknown", SCHEMA, setting("spec.successPolicy", "AnyWorker")),
    case("clean-pod-policy-unknown", SCHEMA, setting(f"{RUN_POLICY}.cleanPodPolicy", "Some")),
    case("managed-by-unknown", SCHEMA, setting(f"{RUN_POLICY}.managedBy", "example.com/other")),
    case("backoff-limit-a-string", SCHEMA, setting(f"{RUN_POLICY}.backoffLimit", "3")),
    case("deadline-a-string", SCHEMA, setting(f"{RUN_POLICY}.activeDeadlineSeconds", "1h")),
    case("ttl-a-boolean", SCHEMA, setting(f"{RUN_POLICY}.ttlSecondsAfterFinished", True)),
    case("suspend-a-string", SCHEMA, setting(f"{RUN_POLICY}.suspend", "yes")),
    case("dynamic-worker-a-string", SCHEMA, setting("spec.enableDynamicWorker", "true")),
    case(
        "min-resources-not-a-quantity",
        SCHEMA,
        setting(f"{RUN_POLICY}.schedulingPolicy.minResources", {"cpu": "lots"}),
    ),
    case(
        "min-resources-fractional",
        SCHEMA,
        setting(f"{RUN_POLICY}.schedulingPolicy.minResources", {"cpu": 1.5}),
    ),
    case("min-available-a-string", SCHEMA, setting(f"{RUN_POLICY}.schedulingPolicy.minAvailable", "2")),
    case("limits-not-a-quantity", SCHEMA, setting(f"{CONTAINER}.resources", {"limits": {"cpu": "one"}})),
    case("container-without-name", SCHEMA, setting(f"{CONTAINER}.name", "~")),
    case("null-container", SCHEMA, setting(f"{WORKER}.template.spec.containers", [None])),
    case(
        "containers-not-a-list", SCHEMA, setting(f"{WORKER}.template.spec.containers", {"name": "tensorflow"})
    ),
    case("pod-spec-without-containers", SCHEMA, setting(f"{WORKER}.template.spec", {"nodeName": "n1"})),
    case("container-port-a-string", SCHEMA, setting(f"{CONTAINER}.ports.0.containerPort", "2222")),
    case("template-a-string", SCHEMA, setting(f"{WORKER}.template", "pod")),
    case("template-label-a-number", SCHEMA, setting(f"{WORKER}.template.metadata.labels", {"a": 1})),
    # --- refused by the validating webhook (what a schema cannot say) ---
    case("name-not-a-dns-1035-label", WEBHOOK, setting("metadata.name", "a.b")),
    case("container-without-image", WEBHOOK, setting(f"{CONTAINER}.image", "~")),
    case("no-tensorflow-container", WEBHOOK, setting(f"{CONTAINER}.name", "main")),
    case("empty-containers", WEBHOOK, setting(f"{WORKER}.template.spec.containers", [])),
    case("replica-without-template", WEBHOOK, setting(f"{WORKER}.template", "~")),
    case(
        "chief-and-master",
        WEBHOOK,
        setting("spec.tfReplicaSpecs.Chief", base()["spec"]["tfReplicaSpecs"]["PS"]),
        setting("spec.tfReplicaSpecs.Master", base()["spec"]["tfReplicaSpecs"]["PS"]),
    ),
    case(
        "two-chiefs",
        WEBHOOK,
        setting("spec.tfReplicaSpecs.Chief", {**base()["spec"]["tfReplicaSpecs"]["PS"], "replicas": 2}),
    ),
    case(
        "unknown-replica-type",
        WEBHOOK,
        setting("spec.tfReplicaSpecs.Launcher", base()["spec"]["tfReplicaSpecs"]["PS"]),
    ),
    case(
        "same-type-twice",
        WEBHOOK,
        setting("spec.tfReplicaSpecs.worker", base()["spec"]["tfReplicaSpecs"]["Worker"]),
    ),
    case("name-too-long-for-replicas", WEBHOOK, setting("metadata.name", "n" * 55)),
]


def test_the_cases_cover_forty_rules_each_once() -> None:
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)
    assert {c.verdict for c in CASES} == {ACCEPTED, SCHEMA, WEBHOOK}


@dataclass(frozen=True)
class ServerVerdict:
    verdict: str
    message: str
    stored: Job | None


async def _dry_run_create(custom: client.CustomObjectsApi, namespace: str, job: Job) -> ServerVerdict:
    try:
        stored = await custom.create_namespaced_custom_object(
            "kubeflow.org", "v1", namespace, "tfjobs", job, dry_run="All"
        )
    except ApiException as refused:
        status = json.loads(refused.body)
        message = str(status.get("message", ""))
        if WEBHOOK_DENIAL in message:
            return ServerVerdict(WEBHOOK, message, None)
        assert refused.status == 422 and status.get("reason") == "Invalid", refused.body
        return ServerVerdict(SCHEMA, message, None)
    return ServerVerdict(ACCEPTED, "", stored)


@pytest.fixture
async def custom_objects(apiserver: Any) -> AsyncIterator[client.CustomObjectsApi]:
    configuration = Configuration()
    await config.load_kube_config(config_file=str(apiserver.kubeconfig), client_configuration=configuration)
    async with ApiClient(configuration=configuration) as api_client:
        yield client.CustomObjectsApi(api_client)


def _explained(jobs: list[Job], namespace: str) -> list[dict[str, Any]]:
    """``kubectl-tfjob explain`` on all the cases at once, as a multi-document file."""
    result = plugin("explain", "-n", namespace, "-f", "-", "-o", "json", stdin=yaml.safe_dump_all(jobs))
    assert result.returncode == 1, result.stderr  # some are invalid
    views: list[dict[str, Any]] = json.loads(result.stdout)["items"]
    assert len(views) == len(jobs)
    return views


def _verdict_of(view: dict[str, Any]) -> str:
    return ACCEPTED if view["valid"] else str(view["refusedBy"])


def _schema_errors(release: Release, job: Job, view: dict[str, Any]) -> list[str]:
    """The words of a schema refusal: explain's, or for an older release kube.schema's for it."""
    if release == CURRENT:
        return list(view["errors"])
    schema = tfjob_schema()
    older = StructuralSchema(schema.openapi, schema.status_subresource, release)
    return [str(error) for error in older.admit(job).errors]


async def test_the_api_server_the_webhook_and_explain_agree_on_every_case(
    cluster: Cluster, custom_objects: client.CustomObjectsApi, release: Release
) -> None:
    namespace = cluster.namespace
    jobs = [c.build() for c in CASES]
    views = _explained(jobs, namespace)
    disagreements = []
    for spec_case, job, view in zip(CASES, jobs, views, strict=True):
        server = await _dry_run_create(custom_objects, namespace, job)
        explained = _verdict_of(view)
        if not spec_case.verdict == server.verdict == explained:
            disagreements.append(
                f"{spec_case.name}: expected {spec_case.verdict}, the server said {server.verdict} "
                f"({server.message}), explain said {explained} ({view['errors']})"
            )
            continue
        if server.verdict == SCHEMA:
            # kube-apiserver's own words: each of explain's errors is in the server's message.
            missing = [error for error in _schema_errors(release, job, view) if error not in server.message]
            if missing:
                disagreements.append(f"{spec_case.name}: {missing} not in the server's {server.message!r}")
        if server.stored is not None:
            decoded = tfjob_schema().admit(job).object
            if server.stored["spec"] != decoded["spec"]:
                disagreements.append(
                    f"{spec_case.name}: stored {server.stored['spec']}, kube.schema's {decoded['spec']}"
                )
    assert disagreements == [], "\n".join(disagreements)
