"""Admission validation: upstream v1.9's messages plus D12 and D16."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tfjob_test_builders import container, make_job, replica, seed_job

from tfjob.validation import ErrorType, FieldError, aggregate, validate_create, validate_update
from tfjob.wire import TFJob

DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
VALID = make_job({"PS": replica(1), "Worker": replica(2)})


def messages(job: TFJob) -> list[str]:
    return [str(error) for error in validate_create(job)]


@pytest.mark.parametrize("seed", ["normal", "ps-failure", "worker-failure"])
def test_the_seed_jobs_are_valid(seed: str) -> None:
    assert validate_create(seed_job(seed)) == []


def test_field_error_prints_like_apimachinery() -> None:
    assert (
        str(FieldError("a.b", ErrorType.REQUIRED, "must be required"))
        == "a.b: Required value: must be required"
    )
    assert str(FieldError("a", ErrorType.INVALID, "bad", "x")) == 'a: Invalid value: "x": bad'
    assert str(FieldError("a", ErrorType.INVALID, "bad", 3)) == "a: Invalid value: 3: bad"
    assert str(FieldError("a", ErrorType.INVALID, "bad", None)) == 'a: Invalid value: "null": bad'
    assert str(FieldError("a", ErrorType.INVALID, "bad", True)) == "a: Invalid value: true: bad"
    assert str(FieldError("a", ErrorType.FORBIDDEN, "no", "ignored")) == "a: Forbidden: no"
    assert str(FieldError("a", ErrorType.DUPLICATE, "", "ps")) == 'a: Duplicate value: "ps"'


def test_aggregate_prints_one_error_as_is_and_several_in_brackets_once_each() -> None:
    one = FieldError("a", ErrorType.FORBIDDEN, "x")
    two = FieldError("b", ErrorType.REQUIRED, "y")
    assert aggregate([]) == ""
    assert aggregate([one]) == "a: Forbidden: x"
    assert aggregate([one, one]) == "a: Forbidden: x"
    assert aggregate([one, two, one]) == "[a: Forbidden: x, b: Required value: y]"


def test_s03_bad_name_is_rejected_with_the_dns1035_message() -> None:
    job = make_job({"Worker": replica()}, name="00test")
    assert messages(job) == [f'metadata.name: Invalid value: "00test": should match: {DNS1035}']


def test_a_long_name_gets_the_length_message_and_a_bad_long_name_both() -> None:
    long_name = "a" * 64
    assert messages(make_job({"Worker": replica()}, name=long_name)) == [
        f'metadata.name: Invalid value: "{long_name}": should match: must be no more than 63 characters'
    ]
    bad_long_name = "A" * 64
    assert messages(make_job({"Worker": replica()}, name=bad_long_name)) == [
        f'metadata.name: Invalid value: "{bad_long_name}": '
        f"should match: must be no more than 63 characters,{DNS1035}"
    ]


def test_s04_missing_tensorflow_container() -> None:
    job = make_job({"Worker": replica(containers=[container("main")])})
    assert messages(job) == [
        "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: "
        "must have at least one container with name tensorflow"
    ]


def test_s05_empty_image_in_container_0() -> None:
    job = make_job({"PS": replica(containers=[container(image="")]), "Worker": replica()})
    assert messages(job) == [
        "spec.tfReplicaSpecs[PS].template.spec.containers[0].image: Required value: must be required"
    ]


def test_s06_no_containers_gives_two_errors_for_the_same_path() -> None:
    job = make_job({"Worker": {"replicas": 1, "template": {"spec": {"containers": []}}}})
    path = "spec.tfReplicaSpecs[Worker].template.spec.containers"
    assert aggregate(validate_create(job)) == (
        f"[{path}: Required value: must be specified, "
        f"{path}: Required value: must have at least one container with name tensorflow]"
    )


def test_s07_chief_and_master_together_are_forbidden() -> None:
    job = make_job({"Chief": replica(), "Master": replica(), "Worker": replica()})
    assert messages(job) == ["spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"]


def test_s07_d16_chief_and_master_are_counted_whatever_their_spelling() -> None:
    job = make_job({"chief": replica(), "Master": replica()})
    assert messages(job) == ["spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"]


def test_s08_d16_rejects_chief_3_evaluator_2_and_unknown_type_foo() -> None:
    """Upstream v1.9 accepts scenario 8; tfgang rejects it under D16."""
    job = make_job({"Chief": replica(3), "Evaluator": replica(2), "Foo": replica(1)})
    assert messages(job) == [
        "spec.tfReplicaSpecs[Chief].replicas: Invalid value: 3: must be less than or equal to 1 for Chief",
        "spec.tfReplicaSpecs[Evaluator].replicas: Invalid value: 2: "
        "must be less than or equal to 1 for Evaluator",
        'spec.tfReplicaSpecs[Foo]: Unsupported value: "Foo": '
        'supported values: "PS", "Worker", "Chief", "Master", "Evaluator"',
    ]


def test_s08_d16_master_replicas_above_one_are_rejected_too() -> None:
    assert messages(make_job({"Master": replica(2)})) == [
        "spec.tfReplicaSpecs[Master].replicas: Invalid value: 2: must be less than or equal to 1 for Master"
    ]


def test_s01_lowercase_known_types_are_accepted() -> None:
    assert messages(make_job({"ps": replica(), "worker": replica(3), "chief": replica(1)})) == []


def test_d16_the_same_type_twice_in_different_spellings_is_a_duplicate() -> None:
    assert messages(make_job({"Worker": replica(), "worker": replica()})) == [
        'spec.tfReplicaSpecs[worker]: Duplicate value: "worker"'
    ]


def test_d16_negative_and_non_integer_replicas() -> None:
    job = make_job({"PS": replica(-1), "Worker": {**replica(), "replicas": "2"}})
    assert messages(job) == [
        "spec.tfReplicaSpecs[PS].replicas: Invalid value: -1: must be greater than or equal to 0",
        'spec.tfReplicaSpecs[Worker].replicas: Invalid value: "2": must be an integer',
    ]


def test_d16_zero_replicas_are_allowed() -> None:
    assert messages(make_job({"PS": replica(1), "Worker": replica(0)})) == []


@pytest.mark.parametrize("policy", ["Always", "OnFailure", "Never", "ExitCode", ""])
def test_d16_known_restart_policies_and_empty_are_accepted(policy: str) -> None:
    assert messages(make_job({"Worker": replica(restart_policy=policy)})) == []


def test_d16_unknown_restart_policy_is_unsupported() -> None:
    assert messages(make_job({"Worker": replica(restart_policy="Sometimes")})) == [
        'spec.tfReplicaSpecs[Worker].restartPolicy: Unsupported value: "Sometimes": '
        'supported values: "Always", "OnFailure", "Never", "ExitCode"'
    ]


def test_d16_success_and_clean_pod_policy_values() -> None:
    job = make_job({"Worker": replica()}, successPolicy="Most", runPolicy={"cleanPodPolicy": "Some"})
    assert messages(job) == [
        'spec.successPolicy: Unsupported value: "Most": supported values: "", "AllWorkers"',
        'spec.runPolicy.cleanPodPolicy: Unsupported value: "Some": '
        'supported values: "None", "Running", "All"',
    ]
    for success, clean in [("", "None"), ("AllWorkers", "Running"), ("AllWorkers", "All")]:
        ok = make_job({"Worker": replica()}, successPolicy=success, runPolicy={"cleanPodPolicy": clean})
        assert messages(ok) == []


def test_d16_name_must_leave_room_for_the_longest_replica_name() -> None:
    # "-evaluator-0" is 12 characters: a 51-character name fits, 52 does not.
    fits = make_job({"Evaluator": replica(1), "Worker": replica(10)}, name="a" * 51)
    assert messages(fits) == []
    too_long = make_job({"Evaluator": replica(1), "Worker": replica(10)}, name="a" * 52)
    longest = "a" * 52 + "-evaluator-0"
    assert messages(too_long) == [
        f'metadata.name: Invalid value: "{"a" * 52}": must be shorter: the replica name "{longest}" has '
        "64 characters, and a DNS-1035 label must be no more than 63 characters"
    ]


def test_d16_the_highest_index_counts_for_the_name_length() -> None:
    job = make_job({"Worker": replica(100)}, name="a" * 53)  # a...-worker-99 is 63 characters
    assert messages(job) == []
    job = make_job({"Worker": replica(101)}, name="a" * 53)  # a...-worker-100 is 64
    assert len(messages(job)) == 1


def test_s09_managed_by_unknown_is_unsupported_and_multikueue_is_accepted() -> None:
    other = make_job({"Worker": replica()}, runPolicy={"managedBy": "other"})
    assert messages(other) == [
        'spec.runPolicy.managedBy: Unsupported value: "other": '
        'supported values: "kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"'
    ]
    assert (
        messages(make_job({"Worker": replica()}, runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"})) == []
    )


def test_s09_managed_by_is_immutable() -> None:
    old = make_job({"Worker": replica()}, runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"})
    new = make_job({"Worker": replica()}, runPolicy={"managedBy": "kubeflow.org/training-operator"})
    assert [str(e) for e in validate_update(old, new)] == [
        'spec.runPolicy.managedBy: Invalid value: "kubeflow.org/training-operator": field is immutable'
    ]
    unset = make_job({"Worker": replica()})
    assert [str(e) for e in validate_update(old, unset)] == [
        'spec.runPolicy.managedBy: Invalid value: "null": field is immutable'
    ]
    assert validate_update(old, copy.deepcopy(old)) == []


def test_s10_d16_queue_is_immutable_in_the_webhook_too() -> None:
    old = make_job({"Worker": replica()}, runPolicy={"schedulingPolicy": {"queue": "q0"}})
    new = make_job({"Worker": replica()}, runPolicy={"schedulingPolicy": {"queue": "q1"}})
    assert [str(e) for e in validate_update(old, new)] == [
        'spec.runPolicy.schedulingPolicy.queue: Invalid value: "q1": field is immutable'
    ]
    same = make_job({"Worker": replica(3)}, runPolicy={"schedulingPolicy": {"queue": "q0"}})
    assert validate_update(old, same) == []


def _kueue_admits(job: TFJob, suspend: bool) -> TFJob:
    """Kueue's update of a job: the flavour's node selector, tolerations, labels and annotations."""
    changed: Any = copy.deepcopy(job)
    for spec in changed["spec"]["tfReplicaSpecs"].values():
        template = spec["template"]
        template["metadata"] = {"labels": {"kueue.x-k8s.io/podset": "worker"}, "annotations": {"a": "b"}}
        template["spec"]["nodeSelector"] = {"pool": "a"}
        template["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    changed["spec"]["runPolicy"]["suspend"] = suspend
    return changed  # type: ignore[no-any-return]


@pytest.mark.parametrize("suspended", [True, False], ids=["suspended", "running"])
def test_kueue_template_changes_are_allowed_as_upstream_allows_them(suspended: bool) -> None:
    """Upstream v1.9 validates an update as a create plus managedBy: template changes pass whether
    the job is suspended or running (a running job's existing pods keep their old template)."""
    old = make_job({"Worker": replica(2)}, runPolicy={"suspend": suspended})
    assert validate_update(old, _kueue_admits(old, suspend=False)) == []
    assert validate_update(old, _kueue_admits(old, suspend=True)) == []


@pytest.mark.parametrize("suspended", [True, False], ids=["suspended", "running"])
def test_what_upstream_refuses_is_refused_suspended_or_not(suspended: bool) -> None:
    old = make_job(
        {"Worker": replica(2)},
        runPolicy={
            "suspend": suspended,
            "managedBy": "kubeflow.org/training-operator",
            "schedulingPolicy": {"queue": "q0"},
        },
    )
    new: Any = _kueue_admits(old, suspend=False)
    new["spec"]["runPolicy"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    new["spec"]["runPolicy"]["schedulingPolicy"] = {"queue": "q1"}
    assert [str(e) for e in validate_update(old, new)] == [
        'spec.runPolicy.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": field is immutable',
        'spec.runPolicy.schedulingPolicy.queue: Invalid value: "q1": field is immutable',
    ]


def test_update_runs_every_create_rule_and_puts_immutability_right_after_the_name() -> None:
    old = make_job(
        {"Worker": replica()}, name="00test", runPolicy={"managedBy": "kubeflow.org/training-operator"}
    )
    new = make_job({"Worker": replica(containers=[container("main")])}, name="00test")
    kinds = [(e.path, e.kind.label) for e in validate_update(old, new)]
    assert kinds == [
        ("metadata.name", "Invalid value"),
        ("spec.runPolicy.managedBy", "Invalid value"),
        ("spec.tfReplicaSpecs[Worker].template.spec.containers", "Required value"),
    ]


def test_d12_null_replica_spec_must_be_specified() -> None:
    job = make_job({"PS": replica(), "Worker": None})
    assert messages(job) == [
        "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must be specified"
    ]


def test_missing_replica_specs_must_be_required() -> None:
    job = make_job({})
    del job["spec"]["tfReplicaSpecs"]
    assert messages(job) == ["spec.tfReplicaSpecs: Required value: must be required"]
    assert messages({"metadata": {"name": "tj"}}) == ["spec.tfReplicaSpecs: Required value: must be required"]


def test_every_error_is_returned_in_a_fixed_order() -> None:
    job = make_job(
        {
            "Worker": replica(containers=[container("main", image="")], restart_policy="Sometimes"),
            "Chief": replica(2),
            "Master": None,
        },
        name="Bad",
        successPolicy="x",
        runPolicy={"managedBy": "me"},
    )
    first = [str(e) for e in validate_create(job)]
    assert [e.split(":")[0] for e in first] == [
        "metadata.name",
        "spec.runPolicy.managedBy",
        "spec.tfReplicaSpecs[Worker].template.spec.containers[0].image",
        "spec.tfReplicaSpecs[Worker].template.spec.containers",
        "spec.tfReplicaSpecs[Worker].restartPolicy",
        "spec.tfReplicaSpecs[Chief].replicas",
        "spec.tfReplicaSpecs[Master].template.spec.containers",
        "spec.tfReplicaSpecs",
        "spec.successPolicy",
    ]
    assert [str(e) for e in validate_create(copy.deepcopy(job))] == first


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
shapes = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.fixed_dictionaries({}, optional={"name": json_values}) | json_values,
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "tfReplicaSpecs": st.dictionaries(
                    st.sampled_from(["PS", "Worker", "chief", "Foo"]),
                    st.none()
                    | st.fixed_dictionaries({}, optional={"replicas": json_values, "template": json_values}),
                )
                | json_values,
                "runPolicy": json_values,
                "successPolicy": json_values,
            },
        )
        | json_values,
    },
)


@settings(max_examples=200)
@given(shapes, shapes)
def test_validation_never_raises_on_any_shape(old: Any, new: Any) -> None:
    errors = validate_update(old, new) + validate_create(new)
    assert all(isinstance(error, FieldError) for error in errors)
    aggregate(errors)


# --- tfgang's annotations (D18) -------------------------------------------------------------------


@pytest.mark.parametrize("value", ["true", "false"])
def test_d18_gang_restart_annotation_values_are_accepted(value: str) -> None:
    job = copy.deepcopy(VALID)
    job["metadata"]["annotations"] = {"tfgang.io/gang-restart": value}
    assert messages(job) == []


def test_d18_gang_restart_annotation_other_values_are_unsupported() -> None:
    job = copy.deepcopy(VALID)
    job["metadata"]["annotations"] = {"tfgang.io/gang-restart": "yes"}
    assert messages(job) == [
        'metadata.annotations[tfgang.io/gang-restart]: Unsupported value: "yes": '
        'supported values: "true", "false"'
    ]


# --- tfgang.io/network-topology ------------------------------------------------------------------

TOPOLOGY = "metadata.annotations[tfgang.io/network-topology]"


def _with_topology(value: str) -> TFJob:
    job = copy.deepcopy(VALID)
    job["metadata"]["annotations"] = {"tfgang.io/network-topology": value}
    return job


@pytest.mark.parametrize(
    "value",
    [
        '{"mode": "hard", "highestTierAllowed": 1}',
        '{"mode": "soft"}',
        '{"highestTierAllowed": 0}',
        "{}",
        '{"mode": "hard", "highestTierName": "leaf-switch"}',
    ],
)
def test_network_topology_annotation_values_are_accepted(value: str) -> None:
    assert messages(_with_topology(value)) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            "hard",
            [
                f'{TOPOLOGY}: Invalid value: "hard": must be a JSON object such as '
                '{"mode": "hard", "highestTierAllowed": 1}'
            ],
        ),
        (
            "[1]",
            [
                f'{TOPOLOGY}: Invalid value: "[1]": must be a JSON object such as '
                '{"mode": "hard", "highestTierAllowed": 1}'
            ],
        ),
        (
            '{"highestTierAllowed": 1, "highestTierName": "leaf"}',
            [
                f"{TOPOLOGY}: Forbidden: must not specify 'highestTierAllowed' and 'highestTierName' "
                "in networkTopology simultaneously"
            ],
        ),
        (
            '{"highestTierName": ""}',
            [
                f'{TOPOLOGY}.highestTierName: Invalid value: "": '
                "must be a HyperNode tier's name, 1 to 253 characters"
            ],
        ),
        (
            '{"highestTierName": 2}',
            [
                f"{TOPOLOGY}.highestTierName: Invalid value: 2: "
                "must be a HyperNode tier's name, 1 to 253 characters"
            ],
        ),
        (
            '{"mode": "strict", "highestTierAllowed": -1}',
            [
                f'{TOPOLOGY}.mode: Unsupported value: "strict": supported values: "hard", "soft"',
                f"{TOPOLOGY}.highestTierAllowed: Invalid value: -1: must be a non-negative integer",
            ],
        ),
        (
            '{"highestTierAllowed": "1", "tier": 2}',
            [
                f'{TOPOLOGY}.tier: Forbidden: unknown field; supported fields: "mode", "highestTierAllowed", '
                '"highestTierName"',
                f'{TOPOLOGY}.highestTierAllowed: Invalid value: "1": must be a non-negative integer',
            ],
        ),
    ],
)
def test_network_topology_annotation_errors_are_worded_as_upstream_words_them(
    value: str, expected: list[str]
) -> None:
    assert messages(_with_topology(value)) == expected


def test_network_topology_annotation_nested_beyond_the_parser_is_a_clear_error() -> None:
    hostile = "[" * 200_000 + "]" * 200_000
    (error,) = messages(_with_topology(hostile))
    assert error.startswith(f"{TOPOLOGY}: Invalid value: ")
    assert len(error) < 500  # the value is cut short in the message
    assert error.endswith('must be a JSON object such as {"mode": "hard", "highestTierAllowed": 1}')
