"""copy_json: a deep copy of decoded JSON, equal to copy.deepcopy's, sharing nothing mutable."""

from __future__ import annotations

import copy
from typing import Any

from kubeobjects.jsonvalues import copy_json


def _mutable_parts(value: Any) -> list[Any]:
    found = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list | set):
            found.append(item)
            stack.extend(item)
        elif isinstance(item, tuple):
            stack.extend(item)
    return found


JOB: dict[str, Any] = {
    "metadata": {"name": "j", "labels": {"a": "b"}, "generation": 3},
    "spec": {
        "tfReplicaSpecs": {
            "Worker": {
                "replicas": 4,
                "template": {"spec": {"containers": [{"name": "tensorflow", "args": ["--x", "1.5"]}]}},
            }
        },
        "runPolicy": {"cleanPodPolicy": None, "suspend": False, "ratio": 0.25},
    },
    "status": {"conditions": [], "replicaStatuses": {"Worker": {"active": 1}}},
}


def test_a_copy_is_equal_and_shares_no_dict_or_list_with_its_original() -> None:
    copied = copy_json(JOB)
    assert copied == JOB == copy.deepcopy(JOB)
    originals = {id(part) for part in _mutable_parts(JOB)}
    assert not originals & {id(part) for part in _mutable_parts(copied)}
    def args(job: dict[str, Any]) -> list[str]:
        return job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"]

    args(copied).append("y")
    assert args(JOB) == ["--x", "1.5"]


def test_what_no_json_decoder_makes_is_still_copied_deeply() -> None:
    class Labels(dict[str, Any]):
        pass

    value = {"tuple": ([1], {"k": [2]}), "set": {1, 2}, "subclass": Labels(a=[1])}
    copied = copy_json(value)
    assert copied == value
    assert type(copied["subclass"]) is Labels
    copied["tuple"][0].append(9)
    copied["subclass"]["a"].append(9)
    assert value["tuple"][0] == [1] and value["subclass"]["a"] == [1]


def test_scalars_come_back_as_they_are() -> None:
    for scalar in ("text", 7, 2.5, True, None):
        assert copy_json(scalar) is scalar
