"""Bounds on what a request can make the webhook spend: every value taken from a request passes
through here before it reaches a metric label, a log line, a cache key, a lookup or a message.

Anything that can reach the webhook's Service can call it, so a review may carry megabyte strings,
thousands of distinct operations or objects nested a thousand levels deep. What Kubernetes itself
would reject is rejected here the same way (label values, namespaces), before any lookup; what is
only echoed is clipped; what becomes a label is one of a fixed set.
"""

from __future__ import annotations

import functools
from typing import Final

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

    Level by level, so the check itself never recurses and keeps no depth per container; an empty
    container ends its branch where it stands, so it is never queued. A pod review with the
    managedFields kube-apiserver records has about 220 containers, 100 of them empty: walked one
    container at a time, each queued with its depth, the check took longer than decoding the
    review; so it takes half as long."""
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
