"""Names, labels, owner references and label parsing (upstream v1.9)."""

from __future__ import annotations

import pytest
from tfjob_test_builders import make_job, replica

from tfjob.facts import read_facts
from tfjob.naming import (
    job_selector,
    replica_index,
    replica_labels,
    replica_name,
)


def test_replica_name_lowercases_the_type_and_replaces_slashes() -> None:
    assert replica_name("mnist", "PS", 0) == "mnist-ps-0"
    assert replica_name("mnist", "Worker", 3) == "mnist-worker-3"
    assert replica_name("mnist", "Evaluator", 0) == "mnist-evaluator-0"
    assert replica_name("a/b", "Worker", 1) == "a-b-worker-1"


def test_job_selector_has_the_operator_and_job_name() -> None:
    assert job_selector("tj") == {
        "training.kubeflow.org/operator-name": "tfjob-controller",
        "training.kubeflow.org/job-name": "tj",
    }


def test_replica_labels_add_job_role_only_for_the_master_role() -> None:
    base = {
        "training.kubeflow.org/operator-name": "tfjob-controller",
        "training.kubeflow.org/job-name": "tj",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "2",
    }
    assert replica_labels("tj", "Worker", 2, master_role=False) == base
    assert replica_labels("tj", "Worker", 2, master_role=True) == {
        **base,
        "training.kubeflow.org/job-role": "master",
    }


def test_s12_only_worker_0_is_master_role_without_a_chief() -> None:
    job = make_job({"PS": replica(2), "Worker": replica(4)})
    roles = {
        (rtype, i): read_facts(job).is_master_role(rtype, i)
        for rtype, n in [("PS", 2), ("Worker", 4)]
        for i in range(n)
    }
    assert [key for key, master in roles.items() if master] == [("Worker", 0)]


def test_s13_only_the_chief_is_master_role_when_there_is_one() -> None:
    job = make_job({"Chief": replica(1), "Worker": replica(2), "PS": replica(1), "Evaluator": replica(1)})
    assert read_facts(job).is_master_role("Chief", 0)
    assert not read_facts(job).is_master_role("Worker", 0)
    assert not read_facts(job).is_master_role("PS", 0)
    assert not read_facts(job).is_master_role("Evaluator", 0)


def test_s08_every_chief_pod_is_master_role() -> None:
    """Scenario 8's job is rejected under D16, but a stored one still gets upstream's roles."""
    job = make_job({"Chief": replica(3), "Evaluator": replica(2), "Foo": replica(1)})
    assert all(read_facts(job).is_master_role("Chief", i) for i in range(3))
    assert not read_facts(job).is_master_role("Foo", 0)
    assert replica_name("tj", "Foo", 0) == "tj-foo-0"


def test_master_role_recognises_lowercase_keys_as_the_controller_normalises_them() -> None:
    job = make_job({"master": replica(1), "worker": replica(2)})
    assert read_facts(job).is_master_role("Master", 0)
    assert not read_facts(job).is_master_role("Worker", 0)


def test_owner_reference_is_a_blocking_controller_reference() -> None:
    assert read_facts(make_job({"Worker": replica()})).owner_reference == {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "name": "tj",
        "uid": "uid-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"training.kubeflow.org/replica-index": "0"}, 0),
        ({"training.kubeflow.org/replica-index": "12"}, 12),
        ({"training.kubeflow.org/replica-index": "-1"}, None),
        ({"training.kubeflow.org/replica-index": "x"}, None),
        ({"training.kubeflow.org/replica-index": ""}, None),
        ({"training.kubeflow.org/replica-index": 3}, None),
        ({}, None),
        (None, None),
    ],
)
def test_replica_index_reads_only_decimal_labels(labels: object, expected: int | None) -> None:
    assert replica_index({"metadata": {"labels": labels}}) == expected


def test_replica_index_of_an_object_without_metadata_is_none() -> None:
    assert replica_index({}) is None


def test_replica_for_label_finds_the_spec_key_of_a_label_value() -> None:
    facts = read_facts(make_job({"PS": replica(), "worker": replica(), "Foo": replica()}))

    def key(label: str) -> str | None:
        found = facts.replica_for_label(label)
        return found.rtype if found is not None else None

    assert key("ps") == "PS"
    assert key("worker") == "Worker"
    assert key("foo") == "Foo"
    assert key("chief") is None
    assert key("Worker") is None
