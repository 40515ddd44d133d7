"""Pure pieces: strategic merge patch directives, selectors, printer-column JSONPath."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.apiserver import errors, jsonpath
from sandbox.apiserver.patch import PatchType, apply_patch, merge_patch, patch_type_of, strategic_merge
from sandbox.apiserver.selectors import build_filter, match_label_selector_object, parse_label_selector


def pod_spec() -> dict[str, Any]:
    return {
        "containers": [
            {
                "name": "tensorflow",
                "image": "a",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "ports": [{"containerPort": 2222, "name": "tfjob-port"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            },
            {"name": "sidecar", "image": "s"},
        ],
        "volumes": [{"name": "data", "emptyDir": {}}],
        "tolerations": [{"key": "a", "operator": "Exists"}],
    }


def test_strategic_merge_merges_lists_by_their_keys() -> None:
    patch = {
        "containers": [
            {
                "name": "tensorflow",
                "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                "ports": [{"containerPort": 2222, "protocol": "TCP"}],
            }
        ],
        "tolerations": [{"key": "b", "operator": "Exists"}],
    }
    merged = strategic_merge(pod_spec(), patch)
    tensorflow = merged["containers"][0]
    assert tensorflow["image"] == "a"
    assert tensorflow["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "3"},
        {"name": "C", "value": "4"},
    ]
    assert tensorflow["ports"] == [{"containerPort": 2222, "name": "tfjob-port", "protocol": "TCP"}]
    assert merged["containers"][1] == {"name": "sidecar", "image": "s"}
    assert merged["tolerations"] == [{"key": "b", "operator": "Exists"}], (
        "lists without a merge key are replaced"
    )


def test_strategic_merge_directives() -> None:
    deleted = strategic_merge(pod_spec(), {"containers": [{"name": "sidecar", "$patch": "delete"}]})
    assert [c["name"] for c in deleted["containers"]] == ["tensorflow"]
    replaced = strategic_merge(
        pod_spec(), {"volumes": [{"$patch": "replace"}, {"name": "other", "emptyDir": {}}]}
    )
    assert replaced["volumes"] == [{"name": "other", "emptyDir": {}}]
    ordered = strategic_merge(
        pod_spec(), {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "tensorflow"}]}
    )
    assert [c["name"] for c in ordered["containers"]] == ["sidecar", "tensorflow"]
    removed = strategic_merge(
        {"metadata": {"finalizers": ["a", "b"]}}, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}
    )
    assert removed == {"metadata": {"finalizers": ["b"]}}
    added = strategic_merge({"metadata": {"finalizers": ["a"]}}, {"metadata": {"finalizers": ["b", "a"]}})
    assert added == {"metadata": {"finalizers": ["a", "b"]}}
    nulled = strategic_merge(pod_spec(), {"volumes": None})
    assert "volumes" not in nulled
    retained = strategic_merge(
        {"strategy": {"type": "A", "rollingUpdate": {"x": 1}}},
        {"strategy": {"$retainKeys": ["type"], "type": "B"}},
    )
    assert retained == {"strategy": {"type": "B"}}


def test_service_ports_merge_by_port() -> None:
    merged = strategic_merge(
        {"ports": [{"port": 80, "name": "http"}]}, {"ports": [{"port": 80, "protocol": "TCP"}]}
    )
    assert merged == {"ports": [{"port": 80, "name": "http", "protocol": "TCP"}]}


def test_merge_patch_replaces_lists_and_deletes_nulls() -> None:
    merged = merge_patch({"a": {"b": 1, "c": 2}, "l": [1, 2]}, {"a": {"b": None, "d": 3}, "l": [3]})
    assert merged == {"a": {"c": 2, "d": 3}, "l": [3]}


def test_json_patch_test_failure_is_invalid() -> None:
    with pytest.raises(errors.ApiError) as failed:
        apply_patch(PatchType.JSON, {"a": 1}, [{"op": "test", "path": "/a", "value": 2}])
    assert failed.value.code == 422


def test_patch_content_types() -> None:
    assert patch_type_of("application/merge-patch+json; charset=utf-8", custom=True) is PatchType.MERGE
    with pytest.raises(errors.ApiError) as refused:
        patch_type_of("application/strategic-merge-patch+json", custom=True)
    assert refused.value.code == 415


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("a=b", {"a": "b"}, True),
        ("a==b,c", {"a": "b", "c": ""}, True),
        ("a!=b", {}, True),
        ("a in (x, y)", {"a": "y"}, True),
        ("a notin (x,y)", {"a": "x"}, False),
        ("!a", {"a": "1"}, False),
        ("training.kubeflow.org/job-name=tftest", {"training.kubeflow.org/job-name": "tftest"}, True),
    ],
)
def test_label_selectors(selector: str, labels: dict[str, str], expected: bool) -> None:
    matches = build_filter(selector, "", "pods", "Pod")
    assert matches is not None
    assert matches({"metadata": {"labels": labels}}) is expected


def test_bad_selectors_are_400() -> None:
    with pytest.raises(errors.ApiError) as bad:
        parse_label_selector("a in x")
    assert bad.value.code == 400
    with pytest.raises(errors.ApiError) as unsupported:
        build_filter("", "spec.bogus=1", "pods", "Pod")
    assert unsupported.value.message == "field label not supported: spec.bogus"


def test_field_selectors_on_pods_and_events() -> None:
    on_node = build_filter("", "spec.nodeName=las1,status.phase!=Succeeded", "pods", "Pod")
    assert on_node is not None
    assert on_node({"metadata": {}, "spec": {"nodeName": "las1"}, "status": {"phase": "Running"}})
    assert not on_node({"metadata": {}, "spec": {"nodeName": "las1"}, "status": {"phase": "Succeeded"}})
    involved = build_filter("", "involvedObject.name=p,involvedObject.kind=Pod", "events", "Event")
    assert involved is not None
    assert involved({"metadata": {}, "involvedObject": {"name": "p", "kind": "Pod"}})


def test_label_selector_objects() -> None:
    selector = {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "DoesNotExist"}]}
    assert match_label_selector_object(selector, {"a": "b"})
    assert not match_label_selector_object(selector, {"a": "b", "c": "d"})
    assert match_label_selector_object({}, None)


def test_printer_column_paths() -> None:
    job = {
        "status": {"conditions": [{"type": "Created"}, {"type": "Running"}]},
        "metadata": {"labels": {"a.b/c": "x"}},
    }
    assert jsonpath.find(job, ".status.conditions[-1:].type") == ["Running"]
    assert jsonpath.find(job, ".status.conditions[0].type") == ["Created"]
    assert jsonpath.find(job, ".status.conditions[*].type") == ["Created", "Running"]
    assert jsonpath.find(job, ".metadata.labels['a.b/c']") == ["x"]
    assert jsonpath.find({}, ".status.conditions[-1:].type") == []
