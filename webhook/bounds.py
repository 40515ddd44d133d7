"""Bounds on what a request can make the webhook spend: every value taken from a request passes
through here before it reaches a metric label, a log line, a cache key, a lookup or a message.

Anything that can reach the webhook's Service can call it, so a review may carry megabyte strings,
thousands of distinct operations or objects nested a thousand levels deep. What Kubernetes itself
would reject is rejected here the same way (label values, namespaces), before any lookup; what is
only echoed is clipped; what becomes a label is one of a fixed set.
"""

from __future__ import annotations

import functools
import threading
from typing import Final

import orjson

from kubeobjects.names import (
    DNS1123_LABEL_MAX_LENGTH,
    LABEL_VALUE_MAX_LENGTH,
    dns1123_label_errors,
    label_value_errors,
    max_length_message,
)

# Deeper than any object Kubernetes stores (a pod is about a dozen levels), shallow enough that
# nothing downstream that recurses (json.dumps in messages, deepcopy, hash-consing) can reach
# Python's recursion limit. orjson alone allows 1,024 levels.
MAX_JSON_DEPTH: Final = 128
# Echoed values (log lines, denial messages, warnings) keep this many characters.
MAX_ECHO: Final = 64

KNOWN_OPERATIONS: Final = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
OTHER_OPERATION: Final = "other"
NO_OPERATION: Final = "none"


class TooDeep(ValueError):
    """A JSON document nested deeper than ``MAX_JSON_DEPTH``."""


def check_depth(document: object, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise ``TooDeep`` when ``document`` (decoded JSON) nests deeper than ``limit``.

    orjson's encoder refuses more than ``_ENCODER_DEPTH`` nested containers (measured at import):
    the document, put at the bottom of ``_ENCODER_DEPTH - limit`` lists, encodes only when it is
    at most ``limit`` deep. That is the whole check for nearly every document: encoding a pod
    review in C costs a quarter of walking its ~220 containers in Python, the largest part of an
    admission's own CPU. Whatever does not encode (too deep, or not JSON-shaped) is walked."""
    wrapper = _encoder_wrapper(limit)
    if wrapper is not None and not wrapper[1]:  # (not in use further up this thread's stack)
        outer, bottom = wrapper
        bottom.append(document)
        try:
            orjson.dumps(outer)
        except orjson.JSONEncodeError:
            pass
        else:
            return
        finally:
            bottom.clear()
    _walk_depth(document, limit)


def _walk_depth(document: object, limit: int) -> None:
    """``check_depth`` in Python. Level by level, so the check itself never recurses and keeps no
    depth per container; an empty container ends its branch where it stands, so it is never
    queued."""
    level = [document] if type(document) is dict or type(document) is list else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            raise _too_deep(limit)
        below: list[dict[str, object] | list[object]] = []
        keep = below.append
        for value in level:
            for child in value.values() if type(value) is dict else value:
                if type(child) is dict or type(child) is list:
                    if child:
                        keep(child)
                    elif depth == limit:
                        raise _too_deep(limit)
        level = below


def _encoder_depth() -> int:
    """How many nested containers ``orjson.dumps`` encodes (254 in orjson 3), lists and objects
    alike; 0 when they differ or it encodes any depth tried, which leaves every check to the walk."""

    def encodes(levels: int, container: type[dict[str, object] | list[object]]) -> bool:
        value: object = None
        for _ in range(levels):
            value = [value] if container is list else {"a": value}
        try:
            orjson.dumps(value)
        except orjson.JSONEncodeError:
            return False
        return True

    deepest, refused = 1, 4096
    if not encodes(deepest, list) or encodes(refused, list):
        return 0
    while refused - deepest > 1:  # encodes(deepest) and not encodes(refused)
        middle = (deepest + refused) // 2
        deepest, refused = (middle, refused) if encodes(middle, list) else (deepest, middle)
    if not encodes(deepest, dict) or encodes(refused, dict):
        return 0
    return deepest


_ENCODER_DEPTH: Final = _encoder_depth()
_wrappers = threading.local()


def _encoder_wrapper(limit: int) -> tuple[list[object], list[object]] | None:
    """``_ENCODER_DEPTH - limit`` nested lists, outermost and innermost (empty); one per thread and
    limit, kept. None when the encoder cannot tell ``limit`` levels."""
    levels = _ENCODER_DEPTH - limit
    if levels < 1 or limit < 1:
        return None
    kept: dict[int, tuple[list[object], list[object]]] | None = getattr(_wrappers, "by_limit", None)
    if kept is None:
        kept = _wrappers.by_limit = {}
    wrapper = kept.get(limit)
    if wrapper is None:
        bottom: list[object] = []
        outer = bottom
        for _ in range(levels - 1):
            outer = [outer]
        wrapper = kept[limit] = (outer, bottom)
    return wrapper


def _too_deep(limit: int) -> TooDeep:
    return TooDeep(f"the body nests more than {limit} levels deep")


def clip(value: object, limit: int = MAX_ECHO) -> str:
    """``value`` as text of bounded length, for echoing in logs and messages."""
    text = value if isinstance(value, str) else repr(value) if _is_scalar(value) else type(value).__name__
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...({len(text)} characters)"


def quoted(value: object, limit: int = MAX_ECHO) -> str:
    """A clipped value in double quotes (strings) or its type name, as apimachinery shows values."""
    return f'"{clip(value, limit)}"' if isinstance(value, str) else clip(value, limit)


def operation_label(operation: str) -> str:
    """The metric label value of a review's operation: one of a fixed set."""
    if operation in KNOWN_OPERATIONS:
        return operation
    return OTHER_OPERATION if operation else NO_OPERATION


def invalid_value(value: str, kind: str, *, fully: bool = True) -> str | None:
    """Why Kubernetes would reject ``value`` as a ``"label"`` value or a ``"namespace"`` name
    (apimachinery's first message), or None. ``fully=False`` checks the length only."""
    limit = LABEL_VALUE_MAX_LENGTH if kind == "label" else DNS1123_LABEL_MAX_LENGTH
    # The length first: no pattern ever runs over a megabyte string.
    if len(value) > limit:
        return max_length_message(limit)
    if not fully:
        return None
    return _pattern_error(value, kind)


# Every pod of a job brings the same namespace and job name: the patterns' verdicts are kept for
# the values seen last. Only values within the length limit (63 characters) get here, so the
# memory stays small whatever callers send.
@functools.lru_cache(maxsize=4096)
def _pattern_error(value: str, kind: str) -> str | None:
    errors = label_value_errors(value) if kind == "label" else dns1123_label_errors(value)
    return errors[0] if errors else None


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, bool | int | float)
