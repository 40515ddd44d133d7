"""merge_patch computes an RFC 7386 patch that really turns the old object into the new one."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kube.patches import (
    PatchType,
    compose_merge_patches,
    escape_json_pointer,
    json_patch_test_resource_version,
    merge_patch,
)


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 section 2, written out independently of the code under test."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


scalars = st.one_of(st.booleans(), st.integers(-5, 5), st.text(max_size=3))
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=2), children, max_size=3)
    ),
    max_leaves=10,
)
objects = st.dictionaries(st.text(max_size=2), json_values, max_size=4)


@settings(max_examples=60, deadline=None)
@given(objects, objects)
def test_merge_patch_turns_old_into_new(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert apply_merge_patch(old, merge_patch(old, new)) == new


@settings(max_examples=30, deadline=None)
@given(objects)
def test_merge_patch_of_equal_objects_is_empty(obj: dict[str, Any]) -> None:
    assert merge_patch(obj, obj) == {}


patches = st.dictionaries(
    st.sampled_from("abc"),
    st.recursive(
        st.one_of(st.none(), scalars),
        lambda children: st.dictionaries(st.sampled_from("abc"), children, max_size=3),
        max_leaves=8,
    ),
    max_size=3,
)


@settings(max_examples=100, deadline=None)
@given(objects, patches, patches)
def test_composed_merge_patches_do_what_both_do_in_turn(
    target: dict[str, Any], first: dict[str, Any], second: dict[str, Any]
) -> None:
    expected = apply_merge_patch(apply_merge_patch(target, first), second)
    assert apply_merge_patch(target, compose_merge_patches(first, second)) == expected


def test_merge_patch_examples() -> None:
    old = {"status": {"conditions": [{"type": "Created"}], "startTime": "t0", "gone": 1}}
    new = {"status": {"conditions": [{"type": "Created"}, {"type": "Running"}], "startTime": "t0"}}
    assert merge_patch(old, new) == {
        "status": {"conditions": [{"type": "Created"}, {"type": "Running"}], "gone": None}
    }
    assert merge_patch({"a": {"b": 1}}, {"a": {}}) == {"a": {"b": None}}


def test_patch_types_carry_their_media_type() -> None:
    assert PatchType.MERGE.content_type == "application/merge-patch+json"
    assert PatchType.JSON.value == "application/json-patch+json"
    assert PatchType.STRATEGIC.value == "application/strategic-merge-patch+json"
    assert PatchType.APPLY.value == "application/apply-patch+yaml"


def test_json_pointer_helpers() -> None:
    assert escape_json_pointer("scheduling.k8s.io/group-name") == "scheduling.k8s.io~1group-name"
    assert escape_json_pointer("a~b") == "a~0b"
    assert json_patch_test_resource_version("42") == {
        "op": "test", "path": "/metadata/resourceVersion", "value": "42"
    }
