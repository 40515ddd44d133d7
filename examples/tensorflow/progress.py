"""The training program's progress lines: one line per event, readable by a person and by a test.

    [train] event=epoch epoch=3 epochs=10 loss=0.4012 accuracy=0.9031 resumed=false time=1765081200.125

A line is ``[train]`` and ``key=value`` fields separated by single spaces; no value contains a space
(the cluster spec is compact JSON). ``time`` is the Unix time the line was written, so a benchmark
can compare it with the moment a job was submitted. Standard library only: the tests and the
benchmark read these lines without TensorFlow.
"""

from __future__ import annotations

import json
import time

PREFIX = "[train]"


def format_line(event: str, **fields: object) -> str:
    parts = [PREFIX, f"event={event}"]
    for key, value in fields.items():
        parts.append(f"{key}={_text(value)}")
    parts.append(f"time={time.time():.3f}")
    return " ".join(parts)


def parse_line(line: str) -> dict[str, str] | None:
    """The fields of a progress line (``event`` included), or None for any other line."""
    head, _, rest = line.strip().partition(" ")
    if head != PREFIX:
        return None
    fields: dict[str, str] = {}
    for part in rest.split(" "):
        key, sep, value = part.partition("=")
        if not sep or not key:
            return None
        fields[key] = value
    return fields if "event" in fields else None


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    text = str(value)
    if not text or " " in text:
        raise ValueError(f"a progress value must be a non-empty word: {text!r}")
    return text
