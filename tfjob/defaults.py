"""TFJob defaulting (upstream v1.9): what the controller assumes for every field left out.

Defaults are applied to a copy in memory, never written back (D8), so every reader of a
job calls ``with_defaults`` itself. The input may be any shape the API server stored, including
``null`` fields; nothing here raises on a missing or mistyped field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from kubeobjects.jsonvalues import copy_json
from tfjob.constants import (
    CLEAN_POD_POLICY_NONE,
    CONTAINER_NAME,
    DEFAULT_PORT,
    DEFAULT_RESTART_POLICY,
    NORMALISE_ORDER,
    PORT_NAME,
    SUCCESS_POLICY_DEFAULT,
)
from tfjob.wire import JSONDict, ReplicaSpec, TFJob


def canonical_replica_type(key: str) -> str:
    """The canonical spelling of a known replica type (``ps`` -> ``PS``); other keys unchanged."""
    for canonical in NORMALISE_ORDER:
        if key.lower() == canonical.lower():
            return canonical
    return key


def with_defaults(job: Mapping[str, Any]) -> TFJob:
    """A deep copy of ``job`` with the defaults applied in upstream's order; ``job`` is untouched.

    ``job`` is raw JSON as stored; the copy is the wire type, every field still read defensively.
    """
    defaulted = cast(TFJob, copy_json(dict(job)))
    spec = defaulted.get("spec")
    if not isinstance(spec, dict):
        return defaulted
    run_policy = spec.get("runPolicy")
    if not isinstance(run_policy, dict):
        run_policy = {}
        spec["runPolicy"] = run_policy
    if run_policy.get("cleanPodPolicy") is None:
        run_policy["cleanPodPolicy"] = CLEAN_POD_POLICY_NONE
    if spec.get("successPolicy") is None:
        spec["successPolicy"] = SUCCESS_POLICY_DEFAULT
    replica_specs = spec.get("tfReplicaSpecs")
    if not isinstance(replica_specs, dict):
        return defaulted
    replica_specs = _normalise_type_keys(replica_specs)
    spec["tfReplicaSpecs"] = replica_specs
    for replica_spec in replica_specs.values():
        if isinstance(replica_spec, dict):
            _default_replica_spec(replica_spec)
    return defaulted


def replica_port(spec: ReplicaSpec) -> int:
    """The ``tfjob-port`` of the ``tensorflow`` container, else the default 2222."""
    for container in _containers(spec):
        if container.get("name") != CONTAINER_NAME:
            continue
        for port in _list_of_dicts(container.get("ports")):
            number = port.get("containerPort")
            if port.get("name") == PORT_NAME and isinstance(number, int) and not isinstance(number, bool):
                return number
    return DEFAULT_PORT


def tensorflow_container(spec: ReplicaSpec) -> JSONDict | None:
    """The first container named ``tensorflow`` in the replica template, if any."""
    for container in _containers(spec):
        if container.get("name") == CONTAINER_NAME:
            return container
    return None


def _normalise_type_keys(replica_specs: dict[str, ReplicaSpec | None]) -> dict[str, ReplicaSpec | None]:
    # Upstream re-keys, for each canonical type in turn, the first differently-spelled key that
    # matches it; a re-keyed spec replaces a canonical key already present. Keys keep their place.
    keys = list(replica_specs)
    values = dict(replica_specs)
    for canonical in NORMALISE_ORDER:
        variant = next((k for k in keys if k != canonical and k.lower() == canonical.lower()), None)
        if variant is None:
            continue
        spec = values.pop(variant)
        if canonical in values:
            keys.remove(canonical)
        keys[keys.index(variant)] = canonical
        values[canonical] = spec
    return {key: values[key] for key in keys}


def _default_replica_spec(replica_spec: ReplicaSpec) -> None:
    if replica_spec.get("replicas") is None:
        replica_spec["replicas"] = 1
    if not replica_spec.get("restartPolicy"):
        replica_spec["restartPolicy"] = DEFAULT_RESTART_POLICY
    containers = _containers(replica_spec)
    target = tensorflow_container(replica_spec) or (containers[0] if containers else None)
    if target is None:
        return
    ports = target.get("ports")
    if not isinstance(ports, list):
        ports = []
        target["ports"] = ports
    if not any(isinstance(port, dict) and port.get("name") == PORT_NAME for port in ports):
        ports.append({"name": PORT_NAME, "containerPort": DEFAULT_PORT})


def _containers(spec: ReplicaSpec) -> list[JSONDict]:
    template: Any = spec.get("template") if isinstance(spec, dict) else None
    pod_spec: Any = template.get("spec") if isinstance(template, dict) else None
    containers: Any = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    return _list_of_dicts(containers)


def _list_of_dicts(value: object) -> list[JSONDict]:
    if not isinstance(value, list):
        return []
    return [cast(JSONDict, item) for item in value if isinstance(item, dict)]
