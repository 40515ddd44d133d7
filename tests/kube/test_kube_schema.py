"""kube.schema: a custom resource pruned, stripped of nulls, defaulted and validated as kube-apiserver
does it, with kube-apiserver's messages: the current release's, and v1.20's where they differ."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.schema import CURRENT, UNCHECKED_RULES, V1_20, Release, StructuralSchema, to_json_schema

QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": "^[0-9]+m?$",
    "x-kubernetes-int-or-string": True,
}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 0, "maximum": 10},
                "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
                "mode": {"type": "string", "enum": ["Fast", "Slow"]},
                "name": {"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^[a-z]+$"},
                "note": {"type": "string", "nullable": True},
                "paused": {"type": "boolean", "default": False},
                "when": {"type": "string", "format": "date-time"},
                "count": {"type": "integer", "format": "int32"},
                "limits": {"type": "object", "additionalProperties": QUANTITY},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "items": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["id"],
                        "properties": {"id": {"type": "string"}, "weight": {"type": "integer", "default": 1}},
                    },
                },
                "byName": {
                    "type": "object",
                    "minProperties": 1,
                    "maxProperties": 2,
                    "additionalProperties": {"type": "object", "properties": {"num": {"type": "integer"}}},
                },
                "nested": {
                    "type": "object",
                    "default": {},
                    "properties": {"level": {"type": "string", "default": "info"}},
                },
                "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "typedOpen": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"known": {"type": "integer"}},
                },
                "embedded": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}},
                },
                "queue": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "queue is immutable"}
                    ],
                },
            },
        },
    },
}


def schema(release: Release = CURRENT) -> StructuralSchema:
    return StructuralSchema(SCHEMA, release=release)


def resource(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "t"},
        "spec": {"size": 1, **spec},
    }


def messages(release: Release = CURRENT, **spec: Any) -> list[str]:
    return [str(error) for error in schema(release).admit(resource(**spec)).errors]


def field_messages(release: Release = CURRENT, **spec: Any) -> list[str]:
    """The messages but the current release's "rules not checked" (SCHEMA has a CEL rule)."""
    return [message for message in messages(release, **spec) if UNCHECKED_RULES not in message]


# --- pruning -----------------------------------------------------------------------------------------
def test_unknown_fields_are_pruned_at_every_level_and_reported() -> None:
    obj = resource(surprise=1, items=[{"id": "a", "extra": True}], byName={"x": {"num": 1, "m": 2}})
    obj["status"] = {"x": 1}
    result = schema().admit(obj)
    assert result.errors == ()
    assert result.pruned == ("spec.surprise", "spec.items[0].extra", "spec.byName.x.m", "status")
    assert result.object["spec"]["items"] == [{"id": "a", "weight": 1}]
    assert result.object["metadata"] == {"name": "t"}  # ObjectMeta is the API server's, not the schema's
    assert result.object["apiVersion"] == "example.com/v1" and result.object["kind"] == "Thing"


def test_preserve_unknown_fields_keeps_them_but_still_prunes_inside_declared_ones() -> None:
    result = schema().admit(resource(open={"a": {"b": [1]}}, typedOpen={"known": 1, "free": {"x": 1}}))
    assert result.pruned == ()
    assert result.object["spec"]["open"] == {"a": {"b": [1]}}
    assert result.object["spec"]["typedOpen"] == {"known": 1, "free": {"x": 1}}
    assert field_messages(typedOpen={"known": "one"}) == [
        'spec.typedOpen.known: Invalid value: "string": spec.typedOpen.known in body must be of type '
        'integer: "string"'
    ]


def test_an_embedded_resource_keeps_its_identity_and_prunes_the_rest() -> None:
    embedded = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"a": "x", "b": 1},
        "c": 2,
    }
    result = schema().admit(resource(embedded=embedded))
    assert result.object["spec"]["embedded"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"a": "x"},
    }
    assert result.pruned == ("spec.embedded.spec.b", "spec.embedded.c")


# --- nulls and defaults --------------------------------------------------------------------------------
def test_nulls_of_non_nullable_fields_are_dropped_nullable_ones_kept() -> None:
    result = schema().admit(resource(mode=None, note=None, byName={"x": None, "y": {"num": 1}}))
    assert result.errors == ()
    spec = result.object["spec"]
    assert "mode" not in spec and spec["note"] is None
    assert spec["byName"] == {"y": {"num": 1}}


def test_a_dropped_null_can_leave_a_required_field_missing() -> None:
    assert field_messages(size=None) == ["spec.size: Required value"]


def test_a_null_map_entry_dropped_leaves_too_few_properties() -> None:
    # The count the map has; v1.20 showed the minimum instead.
    assert messages(byName={"x": None}) == [
        "spec.byName: Invalid value: 0: spec.byName in body should have at least 1 properties"
    ]
    assert messages(V1_20, byName={"x": None}) == [
        "spec.byName: Invalid value: 1: spec.byName in body should have at least 1 properties"
    ]


def test_a_null_list_item_is_not_dropped_and_is_refused() -> None:
    # Named by its index; v1.20 named it by its list.
    assert field_messages(tags=["a", None]) == [
        'spec.tags[1]: Invalid value: "null": spec.tags[1] in body must be of type string: "null"'
    ]
    assert messages(V1_20, tags=["a", None]) == [
        'spec.tags: Invalid value: "null": spec.tags in body must be of type string: "null"'
    ]


def test_defaults_fill_absent_fields_and_nulls_and_apply_inside_defaulted_objects() -> None:
    spec = schema().admit(resource(paused=None)).object["spec"]
    assert spec["paused"] is False
    assert spec["nested"] == {"level": "info"}
    kept = schema().admit(resource(paused=True, nested={"level": "debug"})).object["spec"]
    assert kept["paused"] is True and kept["nested"] == {"level": "debug"}


def test_the_callers_object_is_left_alone() -> None:
    obj = resource(surprise=1, mode=None)
    schema().admit(obj)
    assert obj["spec"] == {"size": 1, "surprise": 1, "mode": None}


# --- int-or-string, formats -----------------------------------------------------------------------------
def test_int_or_string_takes_integers_and_matching_strings_only() -> None:
    assert messages(limits={"cpu": 2, "memory": "500m", "gpu": 1.0}) == []
    # The type, then the anyOf's answer: it fits no branch, and the integer branch's errors.
    wrong_type = (
        'spec.limits.cpu: Invalid value: "number": spec.limits.cpu in body must be of type integer,string: '
        '"number"'
    )
    no_branch = '<nil>: Invalid value: "": "spec.limits.cpu" must validate at least one schema (anyOf)'
    not_integer = (
        'spec.limits.cpu: Invalid value: "number": spec.limits.cpu in body must be of type integer: "number"'
    )
    assert field_messages(limits={"cpu": 1.5}) == [
        wrong_type,
        no_branch,
        not_integer,
        '<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.limits.cpu',
    ]
    assert messages(V1_20, limits={"cpu": 1.5}) == [wrong_type, no_branch, not_integer]
    assert messages(limits={"cpu": "lots"}) == [
        "spec.limits.cpu: Invalid value: \"lots\": spec.limits.cpu in body should match '^[0-9]+m?$'"
    ]


def test_string_formats_are_checked() -> None:
    assert messages(when="2026-12-03T13:00:00Z") == []
    for release in (CURRENT, V1_20):
        assert field_messages(release, when="yesterday") == [
            'spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"'
        ]
        # kube-openapi names a formatted field's wrong type by the format; a list passes unchecked.
        assert field_messages(release, when=5) == [
            'spec.when: Invalid value: "int64": spec.when in body must be of type date-time: "int64"'
        ]
        assert messages(release, when=["yesterday"]) == []


def test_numeric_formats_are_checked_since_v1_20() -> None:
    too_big = (
        '<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.count'
    )
    assert messages(count=2**40) == [too_big]
    assert messages(count=2**31 - 1) == messages(count=-(2**31)) == []
    assert field_messages(count=True) == [
        'spec.count: Invalid value: "": spec.count in body must be of type int32: ""'
    ]
    assert field_messages(size=1.5) == [
        'spec.size: Invalid value: "number": spec.size in body must be of type integer: "number"',
        '<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.size',
    ]
    # v1.20 stripped the numeric formats: no range, and the type named as such.
    assert messages(V1_20, count=2**40) == []
    assert messages(V1_20, count=True) == [
        'spec.count: Invalid value: "boolean": spec.count in body must be of type integer: "boolean"'
    ]
    assert messages(V1_20, size=1.5) == [
        'spec.size: Invalid value: "number": spec.size in body must be of type integer: "number"'
    ]


def test_a_whole_float_counts_as_an_integer_as_in_kube_openapi() -> None:
    assert messages(size=3.0) == []


# --- messages ---------------------------------------------------------------------------------------------
# Each case: the spec, the current release's message, and v1.20's where it differs.
@pytest.mark.parametrize(
    ("spec", "expected", "on_v1_20"),
    [
        (
            {"size": "3"},
            'spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"',
            None,
        ),
        (
            {"size": -1},
            "spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0",
            None,
        ),
        (
            {"size": 11},
            "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
            None,
        ),
        ({"ratio": 0}, "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0", None),
        (
            {"mode": "Medium"},
            'spec.mode: Unsupported value: "Medium": supported values: "Fast", "Slow"',
            None,
        ),
        (
            {"name": "abcdef"},
            "spec.name: Too long: may not be more than 5 bytes",
            'spec.name: Invalid value: "abcdef": spec.name in body should be at most 5 chars long',
        ),
        (
            {"name": "a"},
            'spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long',
            None,
        ),
        ({"name": "A1"}, "spec.name: Invalid value: \"A1\": spec.name in body should match '^[a-z]+$'", None),
        (
            {"tags": ["a", "b", "c"]},
            "spec.tags: Too many: 3: must have at most 2 items",
            "spec.tags: Invalid value: 3: spec.tags in body should have at most 2 items",
        ),
        (
            {"items": []},
            "spec.items: Invalid value: 0: spec.items in body should have at least 1 items",
            None,
        ),
        ({"items": [{"weight": 2}]}, "spec.items[0].id: Required value", "spec.items.id: Required value"),
        (
            {"byName": {"a": {}, "b": {}, "c": {}}},
            "spec.byName: Too many: 3: must have at most 2 items",
            "spec.byName: Invalid value: 2: spec.byName in body should have at most 2 properties",
        ),
        (
            {"paused": "yes"},
            'spec.paused: Invalid value: "string": spec.paused in body must be of type boolean: "string"',
            None,
        ),
        (
            {"note": 5},
            'spec.note: Invalid value: "integer": spec.note in body must be of type string: "integer"',
            None,
        ),
    ],
)
def test_errors_read_as_kube_apiservers(spec: dict[str, Any], expected: str, on_v1_20: str | None) -> None:
    assert field_messages(**spec) == [expected]
    assert messages(V1_20, **spec) == [on_v1_20 or expected]


def test_every_error_is_reported_with_its_status_cause_reason() -> None:
    errors = schema().admit(resource(size="x", mode="Medium", name="abcdef")).errors
    assert [(error.path, error.kind.reason) for error in errors] == [
        ("spec.size", "FieldValueTypeInvalid"),
        ("spec.mode", "FieldValueNotSupported"),
        ("spec.name", "FieldValueTooLong"),
        ("<nil>", "FieldValueInvalid"),  # the CEL rules left unchecked
    ]
    errors = schema(V1_20).admit(resource(size="x", mode="Medium", name="abcdef")).errors
    assert [(error.path, error.kind.reason) for error in errors] == [
        ("spec.size", "FieldValueInvalid"),
        ("spec.mode", "FieldValueNotSupported"),
        ("spec.name", "FieldValueInvalid"),
    ]


def test_a_blocking_error_leaves_the_cel_rules_unchecked_and_says_so() -> None:
    unchecked = f"<nil>: Invalid value: null: {UNCHECKED_RULES}"
    # Blocking: a wrong type, Required, Unsupported, Too long, Too many; even on an update that
    # breaks an immutability rule.
    assert messages(size="3")[-1] == unchecked
    old = resource(queue="a")
    assert [str(e) for e in schema().validate(resource(queue="b", mode="Medium"), old)] == [
        'spec.mode: Unsupported value: "Medium": supported values: "Fast", "Slow"',
        unchecked,
    ]
    # Not blocking: a range, a pattern, too few; then the rules are checked.
    assert messages(size=11) == [
        "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"
    ]
    assert [str(e) for e in schema().validate(resource(queue="b", size=11), old)] == [
        "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
        'spec.queue: Invalid value: "string": queue is immutable',
    ]
    # No CEL rule in the schema, no such cause; nor from v1.20, which ignores CEL rules.
    without_rules = {"type": "object", "properties": {"spec": {"type": "object", "required": ["size"]}}}
    assert [str(e) for e in StructuralSchema(without_rules).admit({"spec": {}}).errors] == [
        "spec.size: Required value"
    ]
    assert unchecked not in messages(V1_20, size="3")


# --- updates, CRDs ----------------------------------------------------------------------------------
def test_the_immutability_rule_is_checked_on_updates_only() -> None:
    old = resource(queue="a")
    assert schema().validate(resource(queue="a"), old) == []
    assert [str(e) for e in schema().validate(resource(queue="b"), old)] == [
        'spec.queue: Invalid value: "string": queue is immutable'
    ]
    assert schema().validate(resource(queue="b")) == []
    assert schema().validate(resource(queue="b"), resource()) == []  # set for the first time


def test_of_crd_picks_the_storage_version_or_the_named_one_and_knows_the_status_subresource() -> None:
    crd = {
        "spec": {
            "versions": [
                {"name": "v1alpha1", "storage": False, "schema": {"openAPIV3Schema": {"type": "object"}}},
                {
                    "name": "v1",
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": SCHEMA},
                },
            ]
        }
    }
    stored = StructuralSchema.of_crd(crd)
    assert stored.openapi == SCHEMA and stored.status_subresource
    old = StructuralSchema.of_crd(crd, "v1alpha1")
    assert old.openapi == {"type": "object"} and not old.status_subresource
    with_status = resource()
    with_status["status"] = {"phase": "Done"}
    assert "status" not in stored.admit(with_status).object
    with pytest.raises(ValueError, match="no version v2"):
        StructuralSchema.of_crd(crd, "v2")


def test_the_translation_for_jsonschema() -> None:
    assert to_json_schema({"type": "string", "nullable": True, "description": "d"}) == {
        "type": ["string", "null"]
    }
    assert to_json_schema(QUANTITY) == {
        "pattern": "^[0-9]+m?$",
        "type": ["integer", "string"],
        "x-int-or-string-any-of": True,
    }
    # The formats a release checks are kept: v1.37's numeric ones, an integer's default int64.
    assert to_json_schema({"type": "integer", "format": "int32"}) == {"type": "integer", "format": "int32"}
    assert to_json_schema({"type": "integer", "format": "int32"}, V1_20) == {"type": "integer"}
    assert to_json_schema({"type": "integer"}) == {"type": "integer", "format": "x-default-int64"}
    assert to_json_schema({"type": "string", "format": "k8s-short-name"}) == {
        "type": "string",
        "format": "k8s-short-name",
    }
    assert to_json_schema({"type": "string", "format": "k8s-short-name"}, V1_20) == {"type": "string"}
    assert to_json_schema({"type": "string", "format": "wild"}) == {"type": "string"}
    assert to_json_schema(
        {"type": "object", "default": {}, "x-kubernetes-preserve-unknown-fields": True}
    ) == {"type": "object"}


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=20,
)
_FIELDS = st.sampled_from([*sorted(SCHEMA["properties"]["spec"]["properties"]), "other"])


@settings(max_examples=200, deadline=None)
@given(spec=st.dictionaries(_FIELDS, _JSON, max_size=6))
def test_any_shape_gets_a_verdict_never_an_exception(spec: dict[str, Any]) -> None:
    result = schema().admit({"apiVersion": "example.com/v1", "kind": "Thing", "spec": spec})
    assert all(str(error) for error in result.errors)
    # What was kept validates the same way again: decoding is idempotent.
    again = schema().admit(result.object)
    assert again.object == result.object and again.pruned == ()
