"""JSON values as decoded (dicts, lists, strings, numbers, booleans, ``None``).

Public API:

- ``copy_json(value)`` -- a deep copy, equal to ``copy.deepcopy(value)``.

The planner copies a job's spec, templates and status on every reconcile pass so that it never
edits what the caches hold. ``copy.deepcopy`` takes three times longer than needed for decoded
JSON: it keeps a memo of every object copied, to preserve shared and cyclic parts that decoded
JSON never has, and asks every value how it copies itself. Here plain dicts and lists are rebuilt
and the immutable scalars shared; anything else (a tuple, a set, a subclass) goes to
``copy.deepcopy``, so the copy is always a deep one.
"""

from __future__ import annotations

import copy
from typing import Any, Final, TypeVar

__all__ = ["copy_json"]

T = TypeVar("T")

_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def copy_json(value: T) -> T:
    return _copy(value)  # type: ignore[no-any-return]


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: item if type(item) in _SCALARS else _copy(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _SCALARS else _copy(item) for item in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)
