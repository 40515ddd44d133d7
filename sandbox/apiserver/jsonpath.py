"""The JSONPath subset CRD printer columns use: ``.a.b``, ``['a.b']``, ``[0]``, ``[-1:]``, ``[*]``."""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(r"\.([A-Za-z0-9_\-$]+)|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]|\[([^\]]*)\]")


def parse(path: str) -> list[tuple[str, Any]]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if text.startswith("$"):
        text = text[1:]
    steps: list[tuple[str, Any]] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match:
            raise ValueError(f"unrecognized JSONPath at {text[position:]!r} in {path!r}")
        field, quoted, double_quoted, bracket = match.groups()
        if field is not None:
            steps.append(("field", field))
        elif quoted is not None or double_quoted is not None:
            steps.append(("field", quoted if quoted is not None else double_quoted))
        else:
            inner = bracket.strip()
            if inner == "*":
                steps.append(("all", None))
            elif ":" in inner:
                start, _, end = inner.partition(":")
                steps.append(
                    ("slice", (int(start) if start.strip() else None, int(end) if end.strip() else None))
                )
            else:
                steps.append(("index", int(inner)))
        position = match.end()
    return steps


def find(obj: Any, path: str) -> list[Any]:
    """All values the path selects (empty when nothing matches)."""
    values = [obj]
    for kind, argument in parse(path):
        next_values: list[Any] = []
        for value in values:
            if kind == "field":
                if isinstance(value, dict) and argument in value:
                    next_values.append(value[argument])
            elif kind == "all":
                if isinstance(value, list):
                    next_values.extend(value)
                elif isinstance(value, dict):
                    next_values.extend(value.values())
            elif kind == "index":
                if isinstance(value, list) and -len(value) <= argument < len(value):
                    next_values.append(value[argument])
            elif isinstance(value, list):
                start, end = argument
                next_values.extend(value[slice(start, end)])
        values = next_values
    return values
