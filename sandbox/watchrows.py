"""Rows of ``kubectl get tfjob|podgroup|po -owide -w``, read back into values.

kubectl pads its columns, but an empty cell (a TFJob without a state, a PodGroup without a phase
or running count) leaves no token, and copies of kubectl output (such as the seed transcript)
often have the padding collapsed to one space. So rows are read by tokens, using what each column
can hold, which works the same on both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_AGE: Final = re.compile(r"^(?:\d+(?:\.\d+)?[smhdy])+$|^<unknown>$|^<invalid>$")
_INTEGER: Final = re.compile(r"^\d+$")
_READY: Final = re.compile(r"^\d+/\d+$")


class RowError(ValueError):
    """A line that is not a row of the expected table."""


@dataclass(frozen=True)
class TFJobRow:
    name: str
    state: str
    age: str


@dataclass(frozen=True)
class PodGroupRow:
    name: str
    status: str
    min_member: int
    runnings: int
    """0 when the column is empty (Volcano omits a zero ``status.running``)."""
    age: str
    queue: str


@dataclass(frozen=True)
class PodRow:
    name: str
    ready: str
    status: str
    restarts: int
    last_restart: str
    """kubectl's ``(3s ago)`` after the count, without the parentheses; empty when absent."""
    age: str
    ip: str
    node: str


def is_header(line: str) -> bool:
    return line.split()[:1] == ["NAME"]


def _tokens(line: str) -> list[str]:
    tokens = line.split()
    if not tokens:
        raise RowError("empty line")
    return tokens


def parse_tfjob_row(line: str) -> TFJobRow:
    """``NAME STATE AGE``; the state is empty before the controller's first status write."""
    tokens = _tokens(line)
    if len(tokens) == 2 and _AGE.match(tokens[1]):
        return TFJobRow(tokens[0], "", tokens[1])
    if len(tokens) == 3 and _AGE.match(tokens[2]):
        return TFJobRow(tokens[0], tokens[1], tokens[2])
    raise RowError(f"not a TFJob row: {line!r}")


def parse_podgroup_row(line: str) -> PodGroupRow:
    """``NAME STATUS MINMEMBER RUNNINGS AGE QUEUE``; STATUS and RUNNINGS may be empty."""
    tokens = _tokens(line)
    if len(tokens) < 4 or not _AGE.match(tokens[-2]):
        raise RowError(f"not a PodGroup row: {line!r}")
    name, middle = tokens[0], tokens[1:-2]
    status = ""
    if middle and not _INTEGER.match(middle[0]):
        status, middle = middle[0], middle[1:]
    if not 1 <= len(middle) <= 2 or not all(_INTEGER.match(token) for token in middle):
        raise RowError(f"not a PodGroup row: {line!r}")
    runnings = int(middle[1]) if len(middle) == 2 else 0
    return PodGroupRow(name, status, int(middle[0]), runnings, tokens[-2], tokens[-1])


def parse_pod_row(line: str) -> PodRow:
    """``NAME READY STATUS RESTARTS AGE IP NODE NOMINATED-NODE READINESS-GATES`` (``-owide``)."""
    tokens = _tokens(line)
    if len(tokens) < 7 or not _READY.match(tokens[1]) or not _INTEGER.match(tokens[3]):
        raise RowError(f"not a pod row: {line!r}")
    rest = tokens[4:]
    last_restart = ""
    if rest and rest[0].startswith("("):
        closing = next((i for i, token in enumerate(rest) if token.endswith(")")), None)
        if closing is None:
            raise RowError(f"unclosed restart time in {line!r}")
        last_restart = " ".join(rest[: closing + 1])[1:-1]
        rest = rest[closing + 1 :]
    if len(rest) < 3 or not _AGE.match(rest[0]):
        raise RowError(f"not a pod row: {line!r}")
    return PodRow(
        name=tokens[0],
        ready=tokens[1],
        status=tokens[2],
        restarts=int(tokens[3]),
        last_restart=last_restart,
        age=rest[0],
        ip=rest[1],
        node=rest[2],
    )
