"""The ``TF_CONFIG`` environment variable, byte for byte as upstream v1.9 writes it.

TensorFlow parses the JSON, but users and tests compare the string, so key order matters:
``cluster``, ``task``, ``environment`` at the top level, ``type`` before ``index`` in ``task``,
and cluster keys sorted (upstream serialises a map there). ``json.dumps(sort_keys=True)`` would
reorder the top level, so the cluster map alone is sorted.
"""

from __future__ import annotations

import json

from tfjob.constants import PS, TF_CONFIG_ENVIRONMENT, WORKER
from tfjob.facts import JobFacts
from tfjob.naming import replica_name


def tf_config(facts: JobFacts, rtype: str, index: int, *, cluster_domain: str = "") -> str | None:
    """The TF_CONFIG of replica ``rtype``/``index``; None for a job that is not distributed."""
    if not facts.distributed:
        return None
    cluster = _cluster_spec(facts, cluster_domain)
    task_type = rtype.lower()
    task = {"type": task_type, "index": index}
    if facts.dynamic_worker:
        return _dumps({"cluster": _sparse_cluster(cluster, task_type, index), "task": task})
    sorted_cluster = {key: cluster[key] for key in sorted(cluster)}
    return _dumps({"cluster": sorted_cluster, "task": task, "environment": TF_CONFIG_ENVIRONMENT})


def _cluster_spec(facts: JobFacts, cluster_domain: str) -> dict[str, list[str]]:
    suffix = f".{facts.namespace}.svc.{cluster_domain}" if cluster_domain else f".{facts.namespace}.svc"
    return {
        replica.rtype.lower(): [
            f"{replica_name(facts.name, replica.rtype, i)}{suffix}:{replica.port}"
            for i in range(replica.replicas)
        ]
        for replica in facts.replica_types
    }


def _sparse_cluster(cluster: dict[str, list[str]], task_type: str, index: int) -> dict[str, object]:
    # Dynamic workers only learn their own address and the PS; a PS only its own address.
    # A worker of a job without any PS key gets "ps": null, as upstream's nil slice does.
    ps_key, worker_key = PS.lower(), WORKER.lower()
    workers: dict[str, str] = {}
    ps: list[str] | None = []
    if task_type == ps_key:
        ps = _at(cluster.get(ps_key), index)
    elif task_type == worker_key:
        ps = cluster.get(ps_key)
        workers = {str(index): address for address in _at(cluster.get(worker_key), index)}
    return {"worker": workers, "ps": ps}


def _at(addresses: list[str] | None, index: int) -> list[str]:
    if addresses is None or not 0 <= index < len(addresses):
        return []
    return [addresses[index]]


def _dumps(document: dict[str, object]) -> str:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)
