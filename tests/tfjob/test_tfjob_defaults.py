"""Defaulting (upstream v1.9): applied to a copy, in upstream's order, tolerant of any shape."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from tfjob_test_builders import container, make_job, replica

from tfjob.defaults import canonical_replica_type, replica_port, with_defaults
from tfjob.facts import read_facts
from tfjob.pods import desired_pod
from tfjob.wire import TFJob


def test_s01_type_normalisation_and_defaults() -> None:
    raw = make_job(
        {
            "ps": {"template": {"spec": {"containers": [container()]}}},
            "worker": {"template": {"spec": {"containers": [container()]}}},
        }
    )
    stored = copy.deepcopy(raw)

    job = with_defaults(raw)

    spec = job["spec"]
    assert list(spec["tfReplicaSpecs"]) == ["PS", "Worker"]
    for replica_spec in spec["tfReplicaSpecs"].values():
        assert replica_spec is not None
        assert replica_spec["replicas"] == 1
        assert replica_spec["restartPolicy"] == "Never"
        tensorflow = replica_spec["template"]["spec"]["containers"][0]
        assert tensorflow["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
    assert spec["runPolicy"]["cleanPodPolicy"] == "None"
    assert spec["successPolicy"] == ""
    assert raw == stored, "the stored spec is unchanged (D8: defaults are never persisted)"
    assert [
        desired_pod(read_facts(job), rtype, 0)["metadata"]["name"] for rtype in spec["tfReplicaSpecs"]
    ] == [
        "tj-ps-0",
        "tj-worker-0",
    ]


def test_s02_custom_port_is_kept_and_read() -> None:
    job = with_defaults(
        make_job(
            {
                "PS": replica(),
                "Worker": replica(
                    containers=[container(ports=[{"name": "tfjob-port", "containerPort": 3333}])]
                ),
            }
        )
    )
    specs = job["spec"]["tfReplicaSpecs"]
    worker, ps = specs["Worker"], specs["PS"]
    assert worker is not None and ps is not None
    assert worker["template"]["spec"]["containers"][0]["ports"] == [
        {"name": "tfjob-port", "containerPort": 3333}
    ]
    assert replica_port(worker) == 3333
    assert replica_port(ps) == 2222


def test_canonical_replica_type_matches_case_insensitively_and_keeps_unknown_keys() -> None:
    assert canonical_replica_type("ps") == "PS"
    assert canonical_replica_type("WORKER") == "Worker"
    assert canonical_replica_type("chief") == "Chief"
    assert canonical_replica_type("mAsTeR") == "Master"
    assert canonical_replica_type("evaluator") == "Evaluator"
    assert canonical_replica_type("Foo") == "Foo"


def test_port_goes_to_container_0_when_no_container_is_named_tensorflow() -> None:
    job = with_defaults(make_job({"Worker": replica(containers=[container("main"), container("side")])}))
    worker = job["spec"]["tfReplicaSpecs"]["Worker"]
    assert worker is not None
    main, side = worker["template"]["spec"]["containers"]
    assert main["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
    assert "ports" not in side
    assert replica_port(worker) == 2222


def test_port_goes_to_the_tensorflow_container_even_when_it_is_not_first() -> None:
    job = with_defaults(make_job({"Worker": replica(containers=[container("sidecar"), container()])}))
    worker = job["spec"]["tfReplicaSpecs"]["Worker"]
    assert worker is not None
    sidecar, tensorflow = worker["template"]["spec"]["containers"]
    assert "ports" not in sidecar
    assert {"name": "tfjob-port", "containerPort": 2222} in tensorflow["ports"]


def test_other_ports_are_kept_and_the_default_appended_after_them() -> None:
    job = with_defaults(
        make_job({"Worker": replica(containers=[container(ports=[{"containerPort": 6006}])])})
    )
    worker = job["spec"]["tfReplicaSpecs"]["Worker"]
    assert worker is not None
    assert worker["template"]["spec"]["containers"][0]["ports"] == [
        {"containerPort": 6006},
        {"name": "tfjob-port", "containerPort": 2222},
    ]


def test_explicit_values_are_not_overwritten() -> None:
    job = with_defaults(
        make_job(
            {"Worker": replica(replicas=0, restart_policy="OnFailure")},
            successPolicy="AllWorkers",
            runPolicy={"cleanPodPolicy": "All"},
        )
    )
    worker = job["spec"]["tfReplicaSpecs"]["Worker"]
    assert worker is not None
    assert (worker["replicas"], worker["restartPolicy"]) == (0, "OnFailure")
    assert job["spec"]["successPolicy"] == "AllWorkers"
    assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "All"


def test_a_differently_spelled_key_replaces_the_canonical_one_in_its_place() -> None:
    job = with_defaults(
        make_job({"Worker": replica(replicas=2), "PS": replica(), "worker": replica(replicas=5)})
    )
    specs = job["spec"]["tfReplicaSpecs"]
    assert list(specs) == ["PS", "Worker"]
    worker = specs["Worker"]
    assert worker is not None and worker["replicas"] == 5


def test_missing_and_null_fields_are_tolerated() -> None:
    assert with_defaults({}) == {}
    null_spec: Any = {"spec": None}
    assert with_defaults(null_spec) == null_spec
    job = with_defaults(make_job({"Worker": None, "PS": {"template": None}}, runPolicy=None))
    assert job["spec"]["tfReplicaSpecs"]["Worker"] is None
    assert job["spec"]["tfReplicaSpecs"]["PS"] == {"template": None, "replicas": 1, "restartPolicy": "Never"}
    assert job["spec"]["runPolicy"] == {"cleanPodPolicy": "None"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)
replica_specs = st.dictionaries(
    st.sampled_from(["PS", "ps", "Worker", "WORKER", "Chief", "Foo"]),
    st.none() | st.fixed_dictionaries({}, optional={"replicas": json_values, "template": json_values}),
    max_size=4,
)


@given(replica_specs, json_values)
def test_with_defaults_never_mutates_never_raises_and_is_idempotent(
    specs: dict[str, Any], run_policy: Any
) -> None:
    raw: TFJob = {"spec": {"tfReplicaSpecs": specs, "runPolicy": run_policy}}
    stored = copy.deepcopy(raw)
    once = with_defaults(raw)
    assert raw == stored
    assert with_defaults(once) == once
