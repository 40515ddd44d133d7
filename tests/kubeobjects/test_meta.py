"""The metadata view answers with typed values whatever shape a raw object has."""

from __future__ import annotations

from typing import Any

import pytest

from kubeobjects.meta import Meta, mapping, sequence, text


def test_a_well_formed_object_reads_as_written() -> None:
    pod = {
        "metadata": {
            "name": "tftest-ps-0",
            "namespace": "default",
            "uid": "u1",
            "resourceVersion": "42",
            "labels": {"a": "1", "n": 2},
            "annotations": {"x": "y"},
            "deletionTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": [
                {"uid": "other", "controller": False},
                {"uid": "job-uid", "controller": True, "kind": "TFJob"},
            ],
        }
    }
    meta = Meta(pod)
    assert (meta.name, meta.namespace, meta.uid) == ("tftest-ps-0", "default", "u1")
    assert meta.resource_version == "42"
    assert meta.key == "default/tftest-ps-0"
    assert meta.label("a") == "1"
    assert meta.label("n") is None  # not a string: not a label value
    assert meta.annotation("x") == "y"
    assert meta.deleting
    assert meta.controller == {"uid": "job-uid", "controller": True, "kind": "TFJob"}
    assert meta.controller_uid == "job-uid"


@pytest.mark.parametrize(
    "obj",
    [
        None,
        {},
        {"metadata": None},
        {"metadata": []},
        {"metadata": "x"},
        {"metadata": {"name": None, "labels": [], "annotations": "a", "ownerReferences": {"a": 1}}},
        {"metadata": {"name": {"a": 1}, "ownerReferences": [None, 3, "x"]}},
    ],
)
def test_any_shape_reads_as_empty(obj: Any) -> None:
    meta = Meta(obj)
    assert (meta.name, meta.namespace, meta.uid, meta.key) == ("", "", "", "")
    assert dict(meta.labels) == {} and dict(meta.annotations) == {}
    assert meta.owner_references == [] and meta.controller is None and meta.controller_uid == ""
    assert not meta.deleting


def test_a_cluster_scoped_key_is_the_name() -> None:
    assert Meta({"metadata": {"name": "las1"}}).key == "las1"


def test_the_helpers_replace_a_wrong_type_by_an_empty_value() -> None:
    assert mapping([1]) == {} and mapping({"a": 1}) == {"a": 1}
    assert sequence({"a": 1}) == () and sequence([1]) == [1]
    assert text(3) == "" and text("x") == "x"
