"""The pod mutation (pure): TF_CONFIG, the gang annotations and the scheduler name of a TFJob pod.

What is done to a pod labelled ``training.kubeflow.org/job-name`` on CREATE, given its TFJob:

- the first container named ``tensorflow`` gets ``TF_CONFIG`` (only for distributed jobs, like
  upstream). A TF_CONFIG the pod already has is kept (design D13), with a warning unless it is
  exactly the value tfgang would set (the API server re-invoking the webhook);
- Volcano: annotations ``scheduling.k8s.io/group-name: <job>`` and ``volcano.sh/task-spec: <rtype>``;
  another gang scheduler: label ``scheduling.x-k8s.io/pod-group: <job>``; gang off: nothing;
- ``schedulerName`` = the gang scheduler when the replica TEMPLATE left it empty. The pod itself
  arrives defaulted to ``default-scheduler``, so the decision is taken on the template.

Other containers, init containers and ephemeral containers are never touched. The result is a
JSON patch that works whether ``env``/``annotations``/``labels`` exist or not, and is empty when
the pod is already mutated (idempotent on reinvocation).

Requests this endpoint does not mutate get a documented answer: a non-CREATE operation, another
kind or a subresource, a pod without the job-name label, one whose ``operator-name`` label names
another operator (PyTorchJob pods carry the same job-name label), or one whose TFJob names another
manager in ``runPolicy.managedBy`` (``JobFacts.managed_here``) is allowed unchanged. A pod whose
TFJob does not exist, whose replica type or index is not in the job, or that has no
``tensorflow`` container is denied (403) with a message saying which.

Only the TFJob's own pods are mutated: the pod's controller ownerReference must be the TFJob
(``kubeflow.org/v1``, kind ``TFJob``, the job-name label's name, and the cached job's uid).
Anything else that merely carries the labels is allowed unchanged with a warning, so a stray pod
never gets another job's TF_CONFIG or joins its gang. The name is checked before the lookup, the
uid after it.

Label values and the namespace Kubernetes itself would reject (too long, wrong characters) are
denied (400) before any lookup, so no request can make the cache or the API server look up
megabyte keys; echoed values are clipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from kube.patches import escape_json_pointer
from kubeobjects.meta import Meta, mapping, scalar_text, sequence, text
from kubeobjects.names import LABEL_VALUE_MAX_LENGTH
from tfjob.constants import (
    API_VERSION,
    CONTAINER_NAME,
    CONTROLLER_NAME,
    KIND,
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    TF_CONFIG_ENV,
)
from tfjob.naming import replica_index_value
from tfjob.settings import Settings
from tfjob.wire import TFJob
from webhook.bounds import invalid_value, quoted
from webhook.job_memo import MutationMemo
from webhook.review import AdmissionRequest, Decision, JSONObject, Reason, allow, deny

DENIED: Final = 403
USER_TF_CONFIG_WARNING: Final = (
    'container "tensorflow" already sets TF_CONFIG: kept the pod\'s value, not the one tfgang computed'
)
# Kubernetes recommends warnings of at most 120 characters.
MAX_WARNING: Final = 120


class PodTarget(NamedTuple):
    """The TFJob a pod belongs to: what to look up before ``mutate_pod`` can decide."""

    namespace: str
    job_name: str
    pod: JSONObject
    # The uid in the pod's controller ownerReference, as ``pod_target`` read it (None: not read).
    owner_uid: str | None = None


def pod_target(request: AdmissionRequest) -> PodTarget | Decision:
    """The TFJob to look up, or the final decision when the request needs no TFJob."""
    if request.kind.kind != "Pod" or request.kind.group or request.sub_resource:
        return allow(Reason.IGNORED)
    if request.operation != "CREATE":
        return allow(Reason.IGNORED)
    pod = request.object
    if pod is None:
        return deny(Reason.MALFORMED, 400, "the pod CREATE review carries no object")
    meta = Meta(pod)
    labels = meta.labels
    job_name = labels.get(LABEL_JOB_NAME)
    if not job_name or not isinstance(job_name, str):
        return allow(Reason.IGNORED)
    # Other Kubeflow operators (PyTorchJob, MPIJob...) label their pods with the same job-name key.
    if labels.get(LABEL_OPERATOR_NAME, CONTROLLER_NAME) != CONTROLLER_NAME:
        return allow(Reason.IGNORED)
    namespace = request.namespace or text(meta.raw.get("namespace"))
    if not namespace:
        return deny(Reason.MALFORMED, 400, "the review names no namespace for the pod")
    invalid = _invalid_value(namespace, labels)
    if invalid is not None:
        return deny(Reason.MALFORMED, 400, invalid)
    owner = meta.controller
    if owner is None or not _controller_named(owner, job_name):
        return _not_controlled(namespace, job_name)
    return PodTarget(namespace, job_name, pod, scalar_text(owner.get("uid")))


# The pod labels checked before the lookup: the job name fully (a lookup key), the replica labels
# for their length only.
_CHECKED_LABELS: Final = ((LABEL_JOB_NAME, True), (LABEL_REPLICA_TYPE, False), (LABEL_REPLICA_INDEX, False))


def _invalid_value(namespace: str, labels: Mapping[str, Any]) -> str | None:
    """What Kubernetes would reject in the values used for the lookup and the mutation.

    The namespace and job name are lookup keys: checked fully. The replica labels only need a
    bounded length here (an index of thousands of digits is beyond ``int``'s conversion limit);
    other bad values keep their own 403 messages in ``mutate_pod``."""
    error = invalid_value(namespace, "namespace")
    if error is not None:
        return f"namespace: Invalid value: {quoted(namespace)}: {error}"
    for key, fully in _CHECKED_LABELS:
        value = labels.get(key)
        # (The length of the replica labels is compared here: no call for the values that pass.)
        if type(value) is not str or (not fully and len(value) <= LABEL_VALUE_MAX_LENGTH):
            continue
        error = invalid_value(value, "label", fully=fully)
        if error is not None:
            return f"metadata.labels {key}: Invalid value: {quoted(value)}: {error}"
    return None


def _controller_named(owner: Mapping[str, Any], job_name: str) -> bool:
    return (
        owner.get("apiVersion") == API_VERSION
        and owner.get("kind") == KIND
        and owner.get("name") == job_name
    )


def _not_controlled(namespace: str, job_name: str) -> Decision:
    warning = f"pod not controlled by TFJob {namespace}/{job_name}: left unchanged, no TF_CONFIG"
    if len(warning) > MAX_WARNING:
        warning = warning[: MAX_WARNING - 3] + "..."
    return allow(Reason.NOT_CONTROLLED, warnings=[warning])


def mutate_pod(
    target: PodTarget,
    job: TFJob | None,
    settings: Settings,
    memo: MutationMemo | None = None,
) -> Decision:
    """The patch for ``target.pod`` given its TFJob (None: it does not exist).

    ``memo`` keeps what is derived from each job version across calls (``webhook.job_memo``; made
    with ``settings.cluster_domain``, and used with the same settings every call): the facts,
    TF_CONFIG and whole decisions per replica and pod shape, so only the checks run again.
    Without one, everything is derived for this call alone.
    """
    job_ref = f"{target.namespace}/{target.job_name}"
    if job is None:
        return deny(
            Reason.NO_TFJOB, DENIED, f"TFJob {job_ref} (label {LABEL_JOB_NAME} of the pod) does not exist"
        )
    if memo is None:
        memo = MutationMemo(cluster_domain=settings.cluster_domain)
    mutations = memo.job(job)
    facts = mutations.facts
    if not facts.managed_here:
        return allow(Reason.IGNORED)  # another manager's job: its pods are its business
    pod = target.pod
    meta = Meta(pod)
    owner_uid = target.owner_uid if target.owner_uid is not None else meta.controller_uid
    if not owner_uid or owner_uid != facts.uid:
        return _not_controlled(target.namespace, target.job_name)
    labels = meta.labels
    type_label = labels.get(LABEL_REPLICA_TYPE)
    replica = mutations.replica_for_label(type_label) if isinstance(type_label, str) else None
    if replica is None:
        known = ", ".join(r.rtype for r in facts.replica_types) or "none"
        return deny(
            Reason.BAD_REPLICA,
            DENIED,
            f"replica type {_quote(type_label)} (label {LABEL_REPLICA_TYPE}) is not in TFJob {job_ref} "
            f"(replica types: {known})",
        )
    index_label = labels.get(LABEL_REPLICA_INDEX)
    index = replica_index_value(index_label) if isinstance(index_label, str) else None
    if index is None:
        return deny(
            Reason.BAD_REPLICA,
            DENIED,
            f"label {LABEL_REPLICA_INDEX} must be a non-negative integer, got {_quote(index_label)}",
        )
    rtype = replica.rtype
    if index >= replica.replicas:
        return deny(
            Reason.BAD_REPLICA,
            DENIED,
            f"replica index {index} is out of range for {rtype} of TFJob {job_ref} "
            f"(replicas: {replica.replicas})",
        )
    spec = mapping(pod.get("spec"))
    containers = sequence(spec.get("containers"))
    position = _position(containers)
    if position is None:
        return deny(
            Reason.NO_CONTAINER,
            DENIED,
            f'the pod has no container named "{CONTAINER_NAME}": a TFJob pod needs one to receive TF_CONFIG',
        )

    marks = mutations.gang_marks(replica, target.job_name, settings)
    container = containers[position]
    env = container.get("env")
    key = None
    if not (isinstance(env, list) and _tf_config_entry(env) is not None):
        # Everything read below beyond the job version (which the memo's entry stands for).
        key = (
            rtype,
            index,
            position,
            isinstance(env, list),
            _entries_state(meta.raw.get("annotations"), marks.annotations),
            _entries_state(meta.raw.get("labels"), marks.labels),
            spec.get("schedulerName") == marks.scheduler_name,
        )
        remembered = mutations.decisions.get(key)
        if remembered is not None:
            return remembered

    patch: list[JSONObject] = []
    warnings: list[str] = []
    value = mutations.tf_config(rtype, index)
    if value is not None:
        _add_tf_config(patch, warnings, position, container, value)
    if marks.annotations:
        _set_entries(patch, "/metadata/annotations", meta.raw.get("annotations"), marks.annotations)
    if marks.labels:
        _set_entries(patch, "/metadata/labels", meta.raw.get("labels"), marks.labels)
    if marks.scheduler_name and spec.get("schedulerName") != marks.scheduler_name:
        patch.append({"op": "add", "path": "/spec/schedulerName", "value": marks.scheduler_name})
    if not patch:
        decision = allow(Reason.UNCHANGED, warnings=warnings)
    else:
        decision = allow(Reason.MUTATED, patch=patch, warnings=warnings)
    return decision if key is None else memo.remember(mutations, key, decision)


# Loops and list displays below, not generator expressions: each runs on every pod admission, and
# a generator's frame costs more than the few items it goes over.


def _position(containers: Sequence[Any]) -> int | None:
    """Where the ``tensorflow`` container is."""
    for position, container in enumerate(containers):
        if isinstance(container, dict) and container.get("name") == CONTAINER_NAME:
            return position
    return None


def _tf_config_entry(env: list[Any]) -> Any:
    for entry in env:
        if isinstance(entry, dict) and entry.get("name") == TF_CONFIG_ENV:
            return entry
    return None


def _entries_state(current: object, wanted: Mapping[str, str]) -> tuple[bool, ...] | None:
    """Which of ``wanted`` the pod's annotations/labels already carry (None: it has no such map)."""
    if not isinstance(current, dict):
        return None
    state = []
    for key, value in wanted.items():
        state.append(current.get(key) == value)
    return tuple(state)


def _add_tf_config(
    patch: list[JSONObject], warnings: list[str], position: int, container: JSONObject, value: str
) -> None:
    env = container.get("env")
    entry = {"name": TF_CONFIG_ENV, "value": value}
    if not isinstance(env, list):
        patch.append({"op": "add", "path": f"/spec/containers/{position}/env", "value": [entry]})
        return
    existing = _tf_config_entry(env)
    if existing is None:
        patch.append({"op": "add", "path": f"/spec/containers/{position}/env/-", "value": entry})
    elif existing.get("value") != value or "valueFrom" in existing:
        warnings.append(USER_TF_CONFIG_WARNING)


def _set_entries(patch: list[JSONObject], path: str, current: object, wanted: Mapping[str, str]) -> None:
    if not isinstance(current, dict):
        patch.append({"op": "add", "path": path, "value": dict(wanted)})
        return
    for key, value in wanted.items():
        if current.get(key) != value:
            patch.append({"op": "add", "path": f"{path}/{escape_json_pointer(key)}", "value": value})


def _quote(value: object) -> str:
    return quoted(value) if isinstance(value, str) else "none"
