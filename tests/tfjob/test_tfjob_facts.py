"""One view of a job: the controller, the webhook, TF_CONFIG and the PodGroup agree on its size.

A stored job may hold a ``replicas`` the schema would reject (a cluster without the CRD's
schema, or an object written before it): every reader goes through ``read_facts``, so a value
of the wrong type counts as unset (1) everywhere, never 1 in one place and 0 in another.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from tfjob_test_builders import make_job, replica

from tfjob.facts import FactsMemo, read_facts, replica_count
from tfjob.planner import Observed, plan
from tfjob.planner.actions import CreatePod
from tfjob.podgroup import desired_podgroup
from tfjob.settings import Settings
from tfjob.tfconfig import tf_config
from webhook.mutate_pod import PodTarget, mutate_pod

NOW = datetime(2026, 11, 29, 10, 41, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "count"), [(None, 1), (1, 1), (3, 3), (0, 0), (-2, 0), ("2", 1), (1.5, 1), (True, 1), ([], 1)]
)
def test_replica_count_is_one_rule(value: Any, count: int) -> None:
    assert replica_count(value) == count


@pytest.mark.parametrize("workers", ["2", 1.5, True, None, 3])
def test_the_controller_the_webhook_tf_config_and_the_podgroup_agree_on_the_size(workers: Any) -> None:
    worker = replica(1)
    if workers is None:
        worker.pop("replicas", None)
    else:
        worker["replicas"] = workers
    job = make_job({"PS": replica(1), "Worker": worker})

    result = plan(Observed(job=job), NOW, Settings(gang_scheduler_name=""))
    created = [action.pod for action in result.actions if isinstance(action, CreatePod)]
    worker_pods = [
        pod for pod in created if pod["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "worker"
    ]
    size = len(worker_pods)

    podgroup = desired_podgroup(read_facts(job), {}, Settings())
    assert podgroup["spec"]["minMember"] == size + 1

    config = tf_config(read_facts(job), "Worker", 0)
    assert config is not None
    assert len(json.loads(config)["cluster"]["worker"]) == size

    settings = Settings()
    for pod in created:
        decision = mutate_pod(PodTarget("ns", "tj", pod), job, settings)
        assert decision.allowed, decision.message
    one_more = json.loads(json.dumps(worker_pods[-1]))
    one_more["metadata"]["labels"]["training.kubeflow.org/replica-index"] = str(size)
    assert not mutate_pod(PodTarget("ns", "tj", one_more), job, settings).allowed


def _versioned(job: Any, uid: str = "uid-1", resource_version: str = "7") -> Any:
    job = json.loads(json.dumps(job))
    job["metadata"].update(uid=uid, resourceVersion=resource_version)
    return job


def test_the_facts_memo_reads_a_job_version_once_and_a_new_version_again() -> None:
    memo = FactsMemo(capacity=8)
    job = _versioned(make_job({"Worker": replica(2)}))
    first = memo.facts(job)
    assert memo.facts(json.loads(json.dumps(job))) is first  # the same version, another copy
    assert first == read_facts(job)
    scaled = _versioned(make_job({"Worker": replica(3)}), resource_version="8")
    assert memo.facts(scaled).total_replicas == 3


def test_the_facts_memo_tells_a_terminating_view_from_the_stored_job() -> None:
    # A client's own delete shows the job terminating under the resourceVersion it had.
    memo = FactsMemo(capacity=8)
    job = _versioned(make_job({"Worker": replica(1)}))
    assert not memo.facts(job).deleting
    job["metadata"]["deletionTimestamp"] = "2026-11-29T10:42:00Z"
    assert memo.facts(job).deleting


def test_the_facts_memo_does_not_keep_jobs_without_a_version_and_is_bounded() -> None:
    memo = FactsMemo(capacity=2)
    unversioned = make_job({"Worker": replica(1)})
    unversioned["metadata"].pop("resourceVersion", None)
    assert memo.facts(unversioned) is not memo.facts(unversioned) and len(memo) == 0
    for index in range(3):
        memo.facts(_versioned(make_job({"Worker": replica(1)}), uid=f"uid-{index}"))
    assert len(memo) == 2


@pytest.mark.parametrize(
    ("specs", "annotation", "expected"),
    [
        ({"Worker": 3}, None, True),  # one collective
        ({"Chief": 1, "Worker": 2}, None, True),
        ({"PS": 1, "Worker": 2}, None, False),  # per-replica, as before
        ({"PS": 0, "Worker": 2}, None, True),
        ({"PS": 1, "Worker": 2}, "true", True),
        ({"Worker": 3}, "false", False),
        ({"Worker": 3}, "maybe", True),  # validation rejects it; a stored one means the default
    ],
)
def test_d18_gang_restart_by_default_without_ps_and_by_annotation(
    specs: dict[str, int], annotation: str | None, expected: bool
) -> None:
    job = make_job({rtype: replica(count) for rtype, count in specs.items()})
    if annotation is not None:
        job["metadata"]["annotations"] = {"tfgang.io/gang-restart": annotation}
    assert read_facts(job).gang_restart is expected
