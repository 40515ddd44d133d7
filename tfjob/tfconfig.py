"""The ``TF_CONFIG`` environment variable, byte for byte as upstream writes it (reference §4).

TensorFlow parses the JSON, but users and tests compare the string, so key order matters:
``cluster``, ``task``, ``environment`` at the top level, ``type`` before ``index`` in ``task``,
and cluster keys sorted (upstream serialises a map there). ``json.dumps(sort_keys=True)`` would
reorder the top level, so the cluster map alone is sorted.
"""

from __future__ import annotations

import json
from typing import cast

from tfjob.constants import KNOWN_TYPES, PS, TF_CONFIG_ENVIRONMENT, WORKER
from tfjob.defaults import canonical_replica_type, replica_port, with_defaults
from tfjob.naming import replica_name
from tfjob.wire import ReplicaSpec, TFJob


def is_distributed(job: TFJob) -> bool:
    """True unless the known replica types add up to exactly one replica (reference §4.1)."""
    total = 0
    for key, spec in _replica_specs(job).items():
        if canonical_replica_type(key) not in KNOWN_TYPES or not isinstance(spec, dict):
            continue
        total += _replica_count(spec.get("replicas"))
    return total != 1


def tf_config(job: TFJob, rtype: str, index: int, *, cluster_domain: str = "") -> str | None:
    """The TF_CONFIG of replica ``rtype``/``index``; None for a job that is not distributed."""
    job = with_defaults(job)
    if not is_distributed(job):
        return None
    cluster = _cluster_spec(job, cluster_domain)
    task_type = rtype.lower()
    task = {"type": task_type, "index": index}
    if (job.get("spec") or {}).get("enableDynamicWorker"):
        return _dumps({"cluster": _sparse_cluster(cluster, task_type, index), "task": task})
    sorted_cluster = {key: cluster[key] for key in sorted(cluster)}
    return _dumps({"cluster": sorted_cluster, "task": task, "environment": TF_CONFIG_ENVIRONMENT})


def _cluster_spec(job: TFJob, cluster_domain: str) -> dict[str, list[str]]:
    metadata = job.get("metadata") or {}
    job_name = metadata.get("name", "")
    namespace = metadata.get("namespace", "")
    domain_suffix = f".{cluster_domain}" if cluster_domain else ""
    cluster: dict[str, list[str]] = {}
    for key, spec in _replica_specs(job).items():
        if not isinstance(spec, dict):
            continue
        port = replica_port(cast(ReplicaSpec, spec))
        cluster[key.lower()] = [
            f"{replica_name(job_name, key, i)}.{namespace}.svc{domain_suffix}:{port}"
            for i in range(_replica_count(spec.get("replicas")))
        ]
    return cluster


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


def _replica_specs(job: TFJob) -> dict[str, object]:
    replica_specs = (job.get("spec") or {}).get("tfReplicaSpecs")
    return dict(replica_specs) if isinstance(replica_specs, dict) else {}


def _replica_count(replicas: object) -> int:
    if replicas is None:
        return 1
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        return 0
    return max(replicas, 0)


def _dumps(document: dict[str, object]) -> str:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)
