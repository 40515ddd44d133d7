"""Small builders for TFJob test objects, following upstream's test conventions.

Job ``tj`` in namespace ``ns``; every replica has a ``tensorflow`` container with an image.
(This folder has no ``__init__.py`` on purpose: a package named ``tfjob`` under ``tests/`` would
shadow the real ``tfjob`` package under pytest's default import mode.)
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from tfjob.wire import TFJob

REPO_ROOT = Path(__file__).resolve().parents[2]
SEED_DIR = REPO_ROOT / "examples" / "seed"
CRD_PATH = REPO_ROOT / "charts" / "tfgang" / "crds" / "kubeflow.org_tfjobs.yaml"


def container(
    name: str = "tensorflow",
    image: str = "tf:2",
    ports: list[dict[str, Any]] | None = None,
    resources: dict[str, Any] | None = None,
    env: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    built: dict[str, Any] = {"name": name, "image": image}
    if ports is not None:
        built["ports"] = ports
    if resources is not None:
        built["resources"] = resources
    if env is not None:
        built["env"] = env
    return built


def replica(
    replicas: int | None = 1,
    restart_policy: str | None = None,
    containers: list[dict[str, Any]] | None = None,
    **pod_spec: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": containers or [container()], **pod_spec}}}
    if replicas is not None:
        spec["replicas"] = replicas
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    return spec


def make_job(
    replica_specs: dict[str, Any], name: str = "tj", namespace: str = "ns", **spec_fields: Any
) -> TFJob:
    job: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace, "uid": "uid-1"},
        "spec": {"tfReplicaSpecs": copy.deepcopy(replica_specs), **spec_fields},
    }
    return job  # type: ignore[return-value]


def seed_job(name: str) -> TFJob:
    loaded: TFJob = yaml.safe_load((SEED_DIR / f"{name}.yaml").read_text())
    return loaded
