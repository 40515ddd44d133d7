"""``kubectl tfjob explain``: what tfgang would create for a TFJob, computed offline (pure).

The answer is the cluster's and the operator's own. The job is first taken as kube-apiserver
takes it: against the TFJob CRD's schema (``kube.schema``: unknown fields pruned, nulls of
non-nullable fields dropped, defaults applied, then the schema's rules), then validated as the
webhook validates the object it receives, that decoded one. Then the reconcile planner is run
on it twice, the way the controller meets a new job: once with no PodGroup (it creates the
PodGroup and holds pods back), once with that PodGroup admitted (it creates the pods and
services). Each pod then gets what pod admission adds (``TF_CONFIG`` and
``tfjob.pods.gang_marks``). PriorityClass values are not known offline, so every class counts as
0 in ``minResources`` ordering unless given.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict, cast

import yaml

from kubeobjects.meta import Meta, mapping, text
from tfjob.constants import CONTAINER_NAME, LABEL_REPLICA_TYPE, TF_CONFIG_ENV
from tfjob.facts import read_facts
from tfjob.naming import replica_index
from tfjob.planner import CreatePod, CreatePodGroup, CreateService, Observed, format_time, managed_here, plan
from tfjob.pods import gang_marks
from tfjob.settings import Settings
from tfjob.tfconfig import tf_config
from tfjob.validation import aggregate, validate_create
from tfjob.wire import Pod, PodGroup, Service, TFJob

if TYPE_CHECKING:
    from kube.schema import StructuralSchema

# A PodGroup phase in which the controller creates pods (any of kubeobjects.volcano.ADMITTED_PHASES would do).
_ADMITTED = "Inqueue"
USER_TF_CONFIG_KEPT = 'container "tensorflow" already sets TF_CONFIG: the pod keeps its own value'
# The chart's CRD (charts/tfgang/crds/), shipped with the plugin so that explain works offline.
_CRD_RESOURCE = "kubeflow.org_tfjobs.yaml"


@functools.cache
def tfjob_schema() -> StructuralSchema:
    """The TFJob CRD's schema, as the chart installs it."""
    # Imported here: jsonschema takes a few hundred milliseconds to import, which `status` and
    # `logs` need not pay.
    from kube.schema import StructuralSchema

    crd = yaml.safe_load(resources.files(__package__).joinpath(_CRD_RESOURCE).read_text(encoding="utf-8"))
    return StructuralSchema.of_crd(crd)


class PodView(TypedDict):
    name: str
    replicaType: str
    index: int
    labels: dict[str, str]
    annotations: dict[str, str]
    schedulerName: str
    restartPolicy: str
    tfConfig: str | None
    warnings: list[str]


class EventView(TypedDict):
    type: str
    reason: str
    message: str


class Explanation(TypedDict):
    namespace: str
    name: str
    valid: bool
    # Who refuses the job: kube-apiserver by the CRD's schema, or the validating webhook.
    refusedBy: NotRequired[Literal["schema", "webhook"]]
    errors: list[str]
    # Why nothing would be created although the job is valid (managedBy, suspend).
    notes: list[str]
    spec: dict[str, Any]
    podGroup: NotRequired[PodGroup]
    pods: list[PodView]
    services: list[Service]
    events: list[EventView]


def explain(
    job: TFJob,
    settings: Settings,
    *,
    namespace: str = "default",
    priority_values: Mapping[str, int] | None = None,
    now: datetime | None = None,
    schema: StructuralSchema | None = None,
) -> Explanation:
    """What tfgang does with ``job`` as submitted; ``namespace`` when its metadata names none.

    ``schema`` is the TFJob CRD's (default: the chart's, shipped with the plugin).
    """
    admitted = (schema or tfjob_schema()).admit(job)
    job = cast(TFJob, admitted.object)
    metadata: Any = job.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        metadata = job["metadata"] = {}
    metadata.setdefault("namespace", namespace)
    if admitted.errors:
        return Explanation(
            namespace=str(metadata.get("namespace") or namespace),
            name=str(metadata.get("name") or ""),
            valid=False,
            refusedBy="schema",
            errors=[str(error) for error in admitted.errors],
            notes=[
                "kube-apiserver refuses this TFJob before any webhook sees it (the errors break the TFJob "
                "CRD's schema), so nothing is created"
            ],
            spec={},
            pods=[],
            services=[],
            events=[],
        )
    spec: Any = read_facts(job).job.get("spec")
    result = Explanation(
        namespace=str(metadata.get("namespace") or namespace),
        name=str(metadata.get("name") or ""),
        valid=True,
        errors=[],
        notes=[],
        spec=spec if isinstance(spec, dict) else {},
        pods=[],
        services=[],
        events=[],
    )
    if admitted.pruned:
        result["notes"].append(
            "kube-apiserver drops the fields the TFJob CRD does not declare: " + ", ".join(admitted.pruned)
        )
    errors = validate_create(job)
    if errors:
        result["valid"] = False
        result["refusedBy"] = "webhook"
        result["errors"] = [str(error) for error in errors]
        result["notes"].append(f"the webhook refuses this TFJob, so nothing is created: {aggregate(errors)}")
        return result
    if not managed_here(job):
        result["notes"].append(
            f"runPolicy.managedBy is {spec['runPolicy'].get('managedBy')!r}: tfgang leaves this job alone"
        )
        return result
    run_policy: Any = (job.get("spec") or {}).get("runPolicy")
    if isinstance(run_policy, dict) and run_policy.get("suspend") is True:
        result["notes"].append("runPolicy.suspend is true: this is what is created once the job is resumed")
        run_policy["suspend"] = False
    _plan_creation(result, job, settings, dict(priority_values or {}), now or datetime.now(UTC))
    return result


def _plan_creation(
    result: Explanation, job: TFJob, settings: Settings, priority_values: dict[str, int], now: datetime
) -> None:
    first = plan(Observed(job=job, priority_values=priority_values), now, settings)
    actions = list(first.actions)
    events = list(first.events)
    podgroup = next((a.podgroup for a in first.actions if isinstance(a, CreatePodGroup)), None)
    if podgroup is not None:
        result["podGroup"] = podgroup
        # The controller's next pass, once the gang scheduler has admitted the PodGroup.
        admitted: PodGroup = copy.deepcopy(podgroup)
        admitted.setdefault("metadata", {})["creationTimestamp"] = format_time(now)
        admitted["status"] = {"phase": _ADMITTED}
        stored = copy.deepcopy(job)
        stored["status"] = first.status
        # Whatever the first pass already created is observed, so nothing is created twice.
        second = plan(
            Observed(
                job=stored,
                pods=[a.pod for a in first.actions if isinstance(a, CreatePod)],
                services=[a.service for a in first.actions if isinstance(a, CreateService)],
                podgroup=admitted,
                priority_values=priority_values,
            ),
            now,
            settings,
        )
        actions += second.actions
        events += second.events
    result["events"] = [EventView(type=e.type, reason=e.reason, message=e.message) for e in events]
    for action in actions:
        if isinstance(action, CreatePod):
            result["pods"].append(_admitted_pod(action.pod, job, settings))
        elif isinstance(action, CreateService):
            result["services"].append(action.service)


def _admitted_pod(pod: Pod, job: TFJob, settings: Settings) -> PodView:
    """The controller's pod as it leaves pod admission: what ``webhook.mutate_pod`` adds to it."""
    meta = Meta(pod)
    pod_spec = mapping(pod.get("spec"))
    labels = dict(meta.labels)
    annotations = dict(meta.annotations)
    facts = read_facts(job)
    replica = facts.replica_for_label(meta.label(LABEL_REPLICA_TYPE) or "")
    if replica is None:
        raise ValueError(f"the planner made a pod of no replica type of the job: {meta.name!r}")
    rtype = replica.rtype
    index = replica_index(pod) or 0
    marks = gang_marks(replica, facts.name, settings)
    labels.update(marks.labels)
    annotations.update(marks.annotations)
    # The API server defaults an empty schedulerName before admission, as kube-apiserver does.
    scheduler_name = marks.scheduler_name or text(pod_spec.get("schedulerName")) or "default-scheduler"
    warnings: list[str] = []
    value = tf_config(facts, rtype, index, cluster_domain=settings.cluster_domain)
    own = _own_tf_config(pod_spec)
    if own is not None and value is not None:
        # Design D13: a user's TF_CONFIG is kept, with a warning.
        warnings.append(USER_TF_CONFIG_KEPT)
        value = own
    return PodView(
        name=meta.name,
        replicaType=rtype,
        index=index,
        labels=labels,
        annotations=annotations,
        schedulerName=scheduler_name,
        restartPolicy=text(pod_spec.get("restartPolicy")),
        tfConfig=value,
        warnings=warnings,
    )


def _own_tf_config(pod_spec: Mapping[str, Any]) -> str | None:
    for container in pod_spec.get("containers") or ():
        if isinstance(container, dict) and container.get("name") == CONTAINER_NAME:
            for entry in container.get("env") or ():
                if isinstance(entry, dict) and entry.get("name") == TF_CONFIG_ENV:
                    return str(entry.get("value") or "<valueFrom>")
            return None
    return None
