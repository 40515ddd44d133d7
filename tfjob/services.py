"""The headless Service of one replica (upstream v1.9): how peers find each other by DNS."""

from __future__ import annotations

from tfjob.defaults import tensorflow_container
from tfjob.facts import JobFacts
from tfjob.naming import replica_labels, replica_name
from tfjob.wire import JSONDict, Service


def desired_service(facts: JobFacts, rtype: str, index: int) -> Service:
    """The Service for ``rtype``/``index`` of the job.

    Its ports are those of the ``tensorflow`` container; a replica without one has no port to
    publish, which is an error (``failed to find the port``) as upstream.
    """
    replica = facts.replica(rtype)
    if replica is None:
        raise ValueError(f"the TFJob has no replica spec {rtype!r}")
    container = tensorflow_container(replica.spec)
    if container is None:
        raise ValueError(f"failed to find the port: replica type {rtype} has no container named tensorflow")

    labels = replica_labels(facts.name, rtype, index, master_role=False)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": replica_name(facts.name, rtype, index),
            "namespace": facts.namespace,
            "labels": labels,
            "ownerReferences": [dict(facts.owner_reference)],
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
