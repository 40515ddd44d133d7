"""TFJob admission validation: upstream v1.9's rules plus D12 and D16.

Errors print exactly like apimachinery's ``field.Error`` and aggregate like ``ToAggregate``,
because users and scripts match these strings. Validation runs on the raw, un-defaulted object,
tolerates any shape, and returns every error in a fixed order: upstream's rules first, in
upstream's order, then tfgang's own (D16).
"""

from __future__ import annotations

__all__ = ["ErrorType", "FieldError", "aggregate", "validate_create", "validate_update"]

import json
from collections.abc import Mapping
from typing import Any, Final

from kubeobjects.fielderrors import ErrorType, FieldError, aggregate, unsupported
from kubeobjects.meta import mapping
from kubeobjects.names import DNS1035_LABEL_MAX_LENGTH, dns1035_label_errors, max_length_message
from tfjob.constants import (
    ANNOTATION_GANG_RESTART,
    ANNOTATION_NETWORK_TOPOLOGY,
    CHIEF,
    CLEAN_POD_POLICIES,
    CONTAINER_NAME,
    EVALUATOR,
    KNOWN_TYPES,
    MANAGED_BY_VALUES,
    MASTER,
    MAX_TIER_NAME_LENGTH,
    NETWORK_TOPOLOGY_FIELDS,
    NETWORK_TOPOLOGY_MODES,
    NORMALISE_ORDER,
    RESTART_POLICIES,
    SUCCESS_POLICIES,
)
from tfjob.defaults import canonical_replica_type
from tfjob.facts import valid_tier_name
from tfjob.naming import replica_name
from tfjob.wire import TFJob

# Types that run as a single process: TensorFlow has one chief and one evaluator (D16).
_SINGLETON_TYPES: Final = (CHIEF, MASTER, EVALUATOR)

_REPLICA_SPECS = "spec.tfReplicaSpecs"
_RUN_POLICY = "spec.runPolicy"


def validate_create(job: TFJob) -> list[FieldError]:
    """Every reason to reject ``job`` on create."""
    return _validate(job, immutable_errors=[])


def validate_update(old: TFJob, new: TFJob) -> list[FieldError]:
    """Every reason to reject the update ``old`` -> ``new``: the create rules plus immutability."""
    old_run_policy = mapping(mapping(old.get("spec")).get("runPolicy"))
    new_run_policy = mapping(mapping(new.get("spec")).get("runPolicy"))
    immutable: list[FieldError] = []
    old_managed_by, new_managed_by = old_run_policy.get("managedBy"), new_run_policy.get("managedBy")
    if old_managed_by != new_managed_by:
        immutable.append(
            FieldError(f"{_RUN_POLICY}.managedBy", ErrorType.INVALID, "field is immutable", new_managed_by)
        )
    old_queue = mapping(old_run_policy.get("schedulingPolicy")).get("queue") or ""
    new_queue = mapping(new_run_policy.get("schedulingPolicy")).get("queue") or ""
    if old_queue != new_queue:
        immutable.append(
            FieldError(
                f"{_RUN_POLICY}.schedulingPolicy.queue", ErrorType.INVALID, "field is immutable", new_queue
            )
        )
    return _validate(new, immutable_errors=immutable)


def _validate(job: TFJob, immutable_errors: list[FieldError]) -> list[FieldError]:
    spec = mapping(job.get("spec"))
    run_policy = mapping(spec.get("runPolicy"))
    # Upstream's order (upstream v1.9): name, managedBy unchanged, managedBy value, replica specs.
    errors = _name_errors(job)
    errors += immutable_errors
    errors += _managed_by_errors(run_policy)
    errors += _replica_specs_errors(spec.get("tfReplicaSpecs"))
    errors += _policy_value_errors(spec, run_policy)
    errors += _replica_name_length_errors(job)
    errors += tfgang_annotation_errors(job)
    return errors


# --- upstream rules -------------------------------------------------------------------------------


def _name_errors(job: TFJob) -> list[FieldError]:
    name = mapping(job.get("metadata")).get("name")
    problems = dns1035_label_errors(name if isinstance(name, str) else "")
    if not problems:
        return []
    return [FieldError("metadata.name", ErrorType.INVALID, f"should match: {','.join(problems)}", name)]


def _managed_by_errors(run_policy: Mapping[str, Any]) -> list[FieldError]:
    managed_by = run_policy.get("managedBy")
    if managed_by is None or managed_by in MANAGED_BY_VALUES:
        return []
    return [unsupported(f"{_RUN_POLICY}.managedBy", managed_by, MANAGED_BY_VALUES)]


def _replica_specs_errors(replica_specs: object) -> list[FieldError]:
    if replica_specs is None:
        return [FieldError(_REPLICA_SPECS, ErrorType.REQUIRED, "must be required")]
    if not isinstance(replica_specs, dict):
        return [
            FieldError(
                _REPLICA_SPECS,
                ErrorType.INVALID,
                "must be a map of replica type to replica spec",
                replica_specs,
            )
        ]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for rtype, replica_spec in replica_specs.items():
        rtype = str(rtype)
        errors += _replica_spec_errors(rtype, replica_spec)
        # D16: every key must name a known type, once, whatever its spelling.
        if canonical_replica_type(rtype) not in KNOWN_TYPES:
            errors.append(unsupported(f"{_REPLICA_SPECS}[{rtype}]", rtype, NORMALISE_ORDER))
        elif canonical_replica_type(rtype) in seen:
            errors.append(FieldError(f"{_REPLICA_SPECS}[{rtype}]", ErrorType.DUPLICATE, "", rtype))
        seen.add(canonical_replica_type(rtype))
    canonical_types = [canonical_replica_type(str(key)) for key in replica_specs]
    # D16: counted case-insensitively, since ``chief`` becomes ``Chief`` once defaulted.
    if sum(1 for rtype in canonical_types if rtype in (CHIEF, MASTER)) > 1:
        errors.append(
            FieldError(_REPLICA_SPECS, ErrorType.FORBIDDEN, "must not have more than 1 Chief or Master role")
        )
    return errors


def _replica_spec_errors(rtype: str, replica_spec: object) -> list[FieldError]:
    path = f"{_REPLICA_SPECS}[{rtype}]"
    containers_path = f"{path}.template.spec.containers"
    if not isinstance(replica_spec, dict):
        # D12: upstream dereferences a null spec; reject it like a spec without containers.
        return [FieldError(containers_path, ErrorType.REQUIRED, "must be specified")]
    containers = _containers(replica_spec)
    errors: list[FieldError] = []
    if not containers:
        errors.append(FieldError(containers_path, ErrorType.REQUIRED, "must be specified"))
    has_tensorflow = False
    for index, container in enumerate(containers):
        container = mapping(container)
        if not container.get("image"):
            errors.append(
                FieldError(f"{containers_path}[{index}].image", ErrorType.REQUIRED, "must be required")
            )
        has_tensorflow = has_tensorflow or container.get("name") == CONTAINER_NAME
    if not has_tensorflow:
        errors.append(
            FieldError(
                containers_path,
                ErrorType.REQUIRED,
                f"must have at least one container with name {CONTAINER_NAME}",
            )
        )
    return errors + _replica_spec_value_errors(rtype, path, replica_spec)


# --- tfgang's own rules (D16) -----------------------------------------------------------------------


def _replica_spec_value_errors(rtype: str, path: str, replica_spec: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    canonical = canonical_replica_type(rtype)
    replicas = replica_spec.get("replicas")
    if replicas is not None:
        if isinstance(replicas, bool) or not isinstance(replicas, int):
            errors.append(FieldError(f"{path}.replicas", ErrorType.INVALID, "must be an integer", replicas))
        elif replicas < 0:
            errors.append(
                FieldError(
                    f"{path}.replicas", ErrorType.INVALID, "must be greater than or equal to 0", replicas
                )
            )
        elif canonical in _SINGLETON_TYPES and replicas > 1:
            errors.append(
                FieldError(
                    f"{path}.replicas",
                    ErrorType.INVALID,
                    f"must be less than or equal to 1 for {canonical}",
                    replicas,
                )
            )
    restart_policy = replica_spec.get("restartPolicy")
    if restart_policy not in (None, "", *RESTART_POLICIES):
        errors.append(unsupported(f"{path}.restartPolicy", restart_policy, RESTART_POLICIES))
    return errors


def _policy_value_errors(spec: Mapping[str, Any], run_policy: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    success_policy = spec.get("successPolicy")
    if success_policy is not None and success_policy not in SUCCESS_POLICIES:
        errors.append(unsupported("spec.successPolicy", success_policy, SUCCESS_POLICIES))
    clean_pod_policy = run_policy.get("cleanPodPolicy")
    if clean_pod_policy is not None and clean_pod_policy not in CLEAN_POD_POLICIES:
        errors.append(unsupported(f"{_RUN_POLICY}.cleanPodPolicy", clean_pod_policy, CLEAN_POD_POLICIES))
    return errors


def _replica_name_length_errors(job: TFJob) -> list[FieldError]:
    """The longest pod/service name must stay a DNS-1035 label, or its creation fails later."""
    name = mapping(job.get("metadata")).get("name")
    if not isinstance(name, str) or dns1035_label_errors(name):
        return []  # the name rule already reported it
    replica_specs = mapping(mapping(job.get("spec")).get("tfReplicaSpecs"))
    longest = ""
    for rtype, replica_spec in replica_specs.items():
        replicas = mapping(replica_spec).get("replicas", 1)
        if isinstance(replicas, bool) or not isinstance(replicas, int):
            continue
        candidate = replica_name(name, str(rtype), max(replicas - 1, 0))
        longest = max(longest, candidate, key=len)
    if len(longest) <= DNS1035_LABEL_MAX_LENGTH:
        return []
    detail = (
        f"must be shorter: the replica name {json.dumps(longest)} has {len(longest)} characters, "
        f"and a DNS-1035 label {max_length_message(DNS1035_LABEL_MAX_LENGTH)}"
    )
    return [FieldError("metadata.name", ErrorType.INVALID, detail, name)]


# --- tfgang's own annotations (docs/behaviour.md) ---------------------------------------------------

GANG_RESTART_VALUES: Final = ("true", "false")


def tfgang_annotation_errors(job: TFJob) -> list[FieldError]:
    """The values of tfgang's annotations on the TFJob, worded as apimachinery words them."""
    annotations = mapping(mapping(job.get("metadata")).get("annotations"))
    errors: list[FieldError] = []
    gang_restart = annotations.get(ANNOTATION_GANG_RESTART)
    if gang_restart is not None and gang_restart not in GANG_RESTART_VALUES:
        path = f"metadata.annotations[{ANNOTATION_GANG_RESTART}]"
        errors.append(unsupported(path, gang_restart, GANG_RESTART_VALUES))
    topology = annotations.get(ANNOTATION_NETWORK_TOPOLOGY)
    if topology is not None:
        errors += _network_topology_errors(f"metadata.annotations[{ANNOTATION_NETWORK_TOPOLOGY}]", topology)
    return errors


def _network_topology_errors(path: str, value: object) -> list[FieldError]:
    try:
        parsed = json.loads(value) if isinstance(value, str) else None
    except (ValueError, RecursionError):  # hostile nesting: a clear error, never a 5xx
        parsed = None
    if not isinstance(parsed, dict):
        detail = 'must be a JSON object such as {"mode": "hard", "highestTierAllowed": 1}'
        shown = value if not isinstance(value, str) or len(value) <= 256 else value[:256] + "..."
        return [FieldError(path, ErrorType.INVALID, detail, shown)]
    known = ", ".join(json.dumps(name) for name in NETWORK_TOPOLOGY_FIELDS)
    errors = [
        FieldError(f"{path}.{key}", ErrorType.FORBIDDEN, f"unknown field; supported fields: {known}")
        for key in parsed
        if key not in NETWORK_TOPOLOGY_FIELDS
    ]
    mode = parsed.get("mode")
    if "mode" in parsed and mode not in NETWORK_TOPOLOGY_MODES:
        errors.append(unsupported(f"{path}.mode", mode, NETWORK_TOPOLOGY_MODES))
    tier = parsed.get("highestTierAllowed")
    if "highestTierAllowed" in parsed and (isinstance(tier, bool) or not isinstance(tier, int) or tier < 0):
        detail = "must be a non-negative integer"
        errors.append(FieldError(f"{path}.highestTierAllowed", ErrorType.INVALID, detail, tier))
    tier_name = parsed.get("highestTierName")
    if "highestTierName" in parsed and not valid_tier_name(tier_name):
        detail = f"must be a HyperNode tier's name, 1 to {MAX_TIER_NAME_LENGTH} characters"
        shown = tier_name if not isinstance(tier_name, str) else tier_name[:256]
        errors.append(FieldError(f"{path}.highestTierName", ErrorType.INVALID, detail, shown))
    if "highestTierAllowed" in parsed and "highestTierName" in parsed:
        # Volcano's own admission refuses the PodGroup with these words.
        detail = (
            "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously"
        )
        errors.append(FieldError(path, ErrorType.FORBIDDEN, detail))
    return errors


# --- helpers ------------------------------------------------------------------------------------------


def _containers(replica_spec: Mapping[str, Any]) -> list[Any]:
    containers = mapping(mapping(replica_spec.get("template")).get("spec")).get("containers")
    return containers if isinstance(containers, list) else []
