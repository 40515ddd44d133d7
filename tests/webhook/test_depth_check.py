"""``check_depth`` at its edge: exactly ``limit`` levels pass, one more is refused, wherever the
deep branch hides among shallow ones and whether it ends in a scalar or an empty container; a
property test holds it to a plain walk of the document."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.bounds import MAX_JSON_DEPTH, TooDeep, check_depth

LIMIT = 8


def _nested(levels: int, leaf: Any = "leaf") -> Any:
    """``levels`` containers deep, alternating objects and lists."""
    value = leaf
    for level in range(levels):
        value = {"a": value} if level % 2 else [value]
    return value


def _check(document: Any) -> None:
    check_depth(document, limit=LIMIT)


@pytest.mark.parametrize("leaf", ["leaf", 1, None, {}, []])
def test_limit_levels_pass_and_one_more_is_refused(leaf: Any) -> None:
    inside = 1 if isinstance(leaf, dict | list) else 0  # an empty container is a level too
    _check(_nested(LIMIT - inside, leaf))
    with pytest.raises(TooDeep, match=f"more than {LIMIT} levels"):
        _check(_nested(LIMIT + 1 - inside, leaf))


def test_a_deep_branch_among_shallow_ones_is_found() -> None:
    shallow = [{"x": [1, 2, {"y": "z"}]} for _ in range(20)]  # far more brackets than the limit
    _check({"items": shallow, "more": shallow})
    with pytest.raises(TooDeep):
        _check({"items": shallow, "deep": {"b": _nested(LIMIT)}, "more": shallow})


def test_scalars_and_flat_documents_pass() -> None:
    for document in ("text", 3, None, [], {}, [1, "two", None, 4.5]):
        _check(document)


def _levels(document: Any) -> int:
    """How deep ``document`` nests, one container at a time (the reference)."""
    deepest, pending = 0, [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, depth)
            children = value.values() if isinstance(value, dict) else value
            pending.extend((child, depth + 1) for child in children)
    return deepest


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None, database=None)
@given(JSON_VALUES)
def test_refused_exactly_when_deeper_than_the_limit(document: Any) -> None:
    too_deep = _levels(document) > LIMIT
    try:
        _check(document)
    except TooDeep:
        assert too_deep
    else:
        assert not too_deep


@pytest.mark.parametrize("leaf", ["leaf", {}, []])
def test_the_default_limit_holds_at_its_edge(leaf: Any) -> None:
    inside = 1 if isinstance(leaf, dict | list) else 0
    check_depth(_nested(MAX_JSON_DEPTH - inside, leaf))
    with pytest.raises(TooDeep, match=f"more than {MAX_JSON_DEPTH} levels"):
        check_depth(_nested(MAX_JSON_DEPTH + 1 - inside, leaf))


def test_values_no_json_decoder_makes_are_still_checked() -> None:
    # Not encodable as JSON (a set, a non-string key): the check does not rely on the encoder then.
    check_depth({"a": {1, 2}, 3: [[]]}, limit=3)
    with pytest.raises(TooDeep):
        check_depth({"a": {1, 2}, 3: [[[]]]}, limit=3)
