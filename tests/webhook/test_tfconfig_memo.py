"""The per-job TF_CONFIG memo gives exactly what ``tfjob.tfconfig.tf_config`` gives."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.webhook.admission_cases import load_cases
from tfjob.facts import read_facts
from tfjob.tfconfig import tf_config
from webhook.tfconfig_memo import TFConfigMemo

JOBS: dict[str, Any] = {job["metadata"]["name"]: job for case in load_cases() for job in case.tfjobs}


def _dynamic(job: dict[str, Any]) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["spec"]["enableDynamicWorker"] = True
    job["metadata"]["name"] += "-dyn"
    return job


ALL_JOBS = list(JOBS.values()) + [_dynamic(job) for job in JOBS.values()]


@pytest.mark.parametrize("domain", ["", "cluster.local"])
@pytest.mark.parametrize("job", ALL_JOBS, ids=[job["metadata"]["name"] for job in ALL_JOBS])
def test_memo_equals_tf_config_for_every_replica(job: Any, domain: str) -> None:
    memo = TFConfigMemo(cluster_domain=domain)
    for _ in range(2):  # the second round is served from the memo
        for rtype, spec in job["spec"]["tfReplicaSpecs"].items():
            for index in range(spec.get("replicas", 1)):
                assert memo.tf_config(job, rtype, index) == tf_config(
                    read_facts(job), rtype, index, cluster_domain=domain
                )


def test_a_new_resource_version_is_computed_again_and_capacity_bounds_the_memo() -> None:
    memo = TFConfigMemo(capacity=2)
    job: Any = copy.deepcopy(JOBS["tftest"])
    before = memo.tf_config(job, "Worker", 0)
    job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 4
    job["metadata"]["resourceVersion"] = "2002"
    after = memo.tf_config(job, "Worker", 0)
    assert before != after and "tftest-worker-3" in (after or "")
    memo.tf_config(JOBS["ce"], "Chief", 0)
    assert len(memo) == 2
