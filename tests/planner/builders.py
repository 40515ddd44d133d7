"""Small builders for planner tests: TFJobs, pods in a given state, PodGroups, Services."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from kubeobjects.times import format_time
from tfjob.defaults import with_defaults
from tfjob.facts import read_facts
from tfjob.planner import Observed, Plan, plan
from tfjob.podgroup import desired_podgroup
from tfjob.pods import desired_pod
from tfjob.services import desired_service
from tfjob.settings import Settings
from tfjob.wire import JobCondition, Pod, PodGroup, Service, TFJob

T0 = datetime(2026, 11, 29, 10, 41, tzinfo=UTC)
VOLCANO = Settings()
NO_GANG = Settings(gang_scheduler_name="")
SCHEDULER_PLUGINS = Settings(gang_scheduler_name="scheduler-plugins-scheduler")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def replica(
    replicas: int | None = 1,
    restart_policy: str | None = None,
    *,
    cpu: str | None = None,
    memory: str | None = None,
    template_spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "tensorflow", "image": "busybox:1.37.0-glibc"}
    requests = {key: value for key, value in (("cpu", cpu), ("memory", memory)) if value is not None}
    if requests:
        container["resources"] = {"requests": requests}
    spec: dict[str, Any] = {"template": {"spec": {"containers": [container], **(template_spec or {})}}}
    if replicas is not None:
        spec["replicas"] = replicas
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    return spec


def make_job(
    replica_specs: dict[str, dict[str, Any]],
    *,
    name: str = "tj",
    namespace: str = "ns",
    run_policy: dict[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    **spec_fields: Any,
) -> TFJob:
    job: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"tfReplicaSpecs": copy.deepcopy(replica_specs), **spec_fields},
    }
    if annotations is not None:
        job["metadata"]["annotations"] = dict(annotations)
    if run_policy is not None:
        job["spec"]["runPolicy"] = dict(run_policy)
    if status is not None:
        job["status"] = copy.deepcopy(status)
    return job  # type: ignore[return-value]


def seed_job(*, backoff_limit: int = 3) -> TFJob:
    """The seed transcript's TFJob: PS 1 (Always) and Worker 3 (OnFailure), backoffLimit 3."""
    return make_job(
        {
            "PS": replica(1, "Always", cpu="1", memory="100Mi"),
            "Worker": replica(3, "OnFailure", cpu="1", memory="100Mi"),
        },
        name="tftest",
        namespace="default",
        run_policy={"backoffLimit": backoff_limit},
    )


def container_status(
    *,
    running: bool = False,
    exit_code: int | None = None,
    reason: str | None = None,
    waiting: str | None = None,
    restarts: int = 0,
    name: str = "tensorflow",
) -> dict[str, Any]:
    state: dict[str, Any]
    if exit_code is not None:
        default_reason = "Completed" if exit_code == 0 else "Error"
        state = {"terminated": {"exitCode": exit_code, "reason": reason or default_reason}}
    elif waiting is not None:
        state = {"waiting": {"reason": waiting, "message": f"back-off restarting failed container {name}"}}
    elif running:
        state = {"running": {"startedAt": format_time(T0)}}
    else:
        state = {"waiting": {"reason": "ContainerCreating"}}
    return {"name": name, "state": state, "restartCount": restarts, "ready": running}


def pod(
    job: TFJob,
    rtype: str,
    index: int,
    phase: str = "Pending",
    *,
    exit_code: int | None = None,
    restarts: int = 0,
    waiting: str | None = None,
    terminating: bool = False,
    uid: str | None = None,
) -> Pod:
    """The pod the planner would create, in the given observed state."""
    built = desired_pod(read_facts(job), rtype, index)
    built["metadata"]["uid"] = uid or f"uid-{built['metadata']['name']}"
    if terminating:
        built["metadata"]["deletionTimestamp"] = format_time(T0)
    statuses = []
    if phase != "Pending" or exit_code is not None or waiting is not None:
        statuses = [
            container_status(
                running=phase == "Running" and exit_code is None and waiting is None,
                exit_code=exit_code,
                waiting=waiting,
                restarts=restarts,
            )
        ]
    built["status"] = {"phase": phase, "containerStatuses": statuses}
    return built


def services(job: TFJob) -> list[Service]:
    """Every Service the job needs, as if all had been created."""
    defaulted = with_defaults(job)
    found = []
    for rtype, spec in (defaulted.get("spec") or {}).get("tfReplicaSpecs", {}).items():
        for index in range((spec or {}).get("replicas", 1)):
            found.append(desired_service(read_facts(job), rtype, index))
    return found


def podgroup(
    job: TFJob, phase: str = "", *, created: datetime = T0, settings: Settings = VOLCANO
) -> PodGroup:
    built = desired_podgroup(read_facts(job), {}, settings)
    built["metadata"]["creationTimestamp"] = format_time(created)
    if phase:
        built["status"] = {"phase": phase}
    return built


def with_status(job: TFJob, result: Plan) -> TFJob:
    updated = copy.deepcopy(job)
    updated["status"] = copy.deepcopy(result.status)
    return updated


def run(
    job: TFJob,
    pods: list[Pod] | None = None,
    *,
    svcs: list[Service] | None = None,
    group: PodGroup | None = None,
    now: datetime = T0,
    settings: Settings = NO_GANG,
    priority_values: dict[str, int] | None = None,
) -> Plan:
    return plan(
        Observed(job, pods or [], svcs if svcs is not None else [], group, priority_values or {}),
        now,
        settings,
    )


def condition_types(result: Plan) -> list[str]:
    return [condition.get("type", "") for condition in result.status.get("conditions", [])]


def conditions_of(result: Plan) -> list[tuple[str, str]]:
    return [(c.get("type", ""), c.get("status", "")) for c in result.status.get("conditions", [])]


def condition(result: Plan, type_: str) -> JobCondition:
    for found in result.status.get("conditions", []):
        if found.get("type") == type_:
            return found
    raise AssertionError(f"no {type_} condition in {condition_types(result)}")


def running_status(conditions: list[str]) -> dict[str, Any]:
    """A status whose conditions are ``conditions`` (all True), as an earlier pass wrote them."""
    return {
        "conditions": [
            {"type": type_, "status": "True", "reason": f"TFJob{type_}", "message": "", "lastUpdateTime": "x"}
            for type_ in conditions
        ],
        "startTime": format_time(T0),
    }


def action_names(result: Plan) -> list[str]:
    names = []
    for action in result.actions:
        label = getattr(action, "name", "")
        names.append(f"{type(action).__name__}:{label}")
    return names


def reasons(result: Plan) -> list[str]:
    return [event.reason for event in result.events]
