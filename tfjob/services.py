"""The headless Service of one replica (reference §3.5): how peers find each other by DNS."""

from __future__ import annotations

from typing import Any

from tfjob.defaults import tensorflow_container
from tfjob.naming import owner_reference, replica_labels, replica_name
from tfjob.wire import JSONDict, ReplicaSpec, Service, TFJob


def desired_service(job: TFJob, rtype: str, index: int) -> Service:
    """The Service for ``rtype``/``index`` of a DEFAULTED job.

    Its ports are those of the ``tensorflow`` container; a replica without one has no port to
    publish, which is an error (``failed to find the port``) as upstream.
    """
    job_metadata = job.get("metadata") or {}
    job_name = job_metadata.get("name", "")
    replica_specs: Any = (job.get("spec") or {}).get("tfReplicaSpecs") or {}
    replica_spec: ReplicaSpec | None = replica_specs.get(rtype)
    if not isinstance(replica_spec, dict):
        raise ValueError(f"the TFJob has no replica spec {rtype!r}")
    container = tensorflow_container(replica_spec)
    if container is None:
        raise ValueError(f"failed to find the port: replica type {rtype} has no container named tensorflow")

    labels = replica_labels(job_name, rtype, index, master_role=False)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": replica_name(job_name, rtype, index),
            "namespace": job_metadata.get("namespace", ""),
            "labels": labels,
            "ownerReferences": [dict(owner_reference(job))],
        },
        "spec": {"clusterIP": "None", "selector": dict(labels), "ports": _service_ports(container)},
    }


def _service_ports(container: JSONDict) -> list[JSONDict]:
    ports: list[JSONDict] = []
    declared = container.get("ports")
    for port in declared if isinstance(declared, list) else []:
        if not isinstance(port, dict) or not isinstance(port.get("containerPort"), int):
            continue
        entry: JSONDict = {"port": port["containerPort"]}
        if port.get("name"):
            entry = {"name": port["name"], **entry}
        ports.append(entry)
    return ports
