"""Bounds on what a request can make the webhook spend: every value taken from a request passes
through here before it reaches a metric label, a log line, a cache key, a lookup or a message.

Anything that can reach the webhook's Service can call it, so a review may carry megabyte strings,
thousands of distinct operations or objects nested a thousand levels deep. What Kubernetes itself
would reject is rejected here the same way (label values, namespaces), before any lookup; what is
only echoed is clipped; what becomes a label is one of a fixed set.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
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

_BRACKETS: Final = b"[{"
_CONTAINERS: Final = (dict, list)


class TooDeep(ValueError):
    """A JSON document nested deeper than ``MAX_JSON_DEPTH``."""


def check_depth(document: object, body: bytes, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise ``TooDeep`` when ``document`` (decoded from ``body``) nests deeper than ``limit``.

    A document cannot nest deeper than it has opening brackets, and counting them in the raw bytes
    (what deleting them takes off its length: one pass over the bytes, where two ``count`` calls
    take half as long again) is cheap, so small reviews skip the walk entirely."""
    if len(body) - len(body.translate(None, _BRACKETS)) <= limit:
        return
    if not isinstance(document, _CONTAINERS):
        return
    # Iterative, so the check itself never recurses; only containers are stacked (a review's
    # scalars outnumber them several times, and stacking those too made the walk twice as long).
    pending: list[tuple[dict[str, object] | list[object], int]] = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > limit:
            raise TooDeep(f"the body nests more than {limit} levels deep")
        children: Iterable[object] = value.values() if isinstance(value, dict) else value
        for child in children:
            if isinstance(child, _CONTAINERS):
                pending.append((child, depth + 1))


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
