"""Validation errors printed exactly as apimachinery's ``field.Error`` and ``ToAggregate`` print them.

Users and scripts match these strings, and kube-apiserver's ``Status`` causes carry the same
parts (``reason`` from the error type, ``message`` from the body, ``field`` from the path), so the
webhook's rules, the CRD schema check and the sandbox API server all speak through this one type.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class ErrorType(StrEnum):
    """apimachinery's ``field.ErrorType``: its value is the ``reason`` a ``Status`` cause carries."""

    REQUIRED = "FieldValueRequired"
    INVALID = "FieldValueInvalid"
    # A value of the wrong JSON type in a CRD schema (current releases; v1.20 said INVALID); printed
    # as INVALID is.
    TYPE_INVALID = "FieldValueTypeInvalid"
    FORBIDDEN = "FieldValueForbidden"
    UNSUPPORTED = "FieldValueNotSupported"
    DUPLICATE = "FieldValueDuplicate"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"

    @property
    def label(self) -> str:
        """How a message prints the type (``Invalid value``)."""
        return _LABELS[self]

    @property
    def shows_value(self) -> bool:
        """Whether the message quotes the value (apimachinery's ErrorBody)."""
        return self not in (ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG)

    @property
    def reason(self) -> str:
        """The ``CauseType`` a ``Status`` cause carries for this error type."""
        return self.value


_LABELS = {
    ErrorType.REQUIRED: "Required value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.TYPE_INVALID: "Invalid value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.UNSUPPORTED: "Unsupported value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
}


class GoNil:
    """A bad value that is Go's ``nil`` in current releases' ErrorBody, printed ``null`` (JSON)."""

    def __repr__(self) -> str:
        return "null"


GO_NIL: Final = GoNil()


@dataclass(frozen=True)
class FieldError:
    """One validation failure, printed as apimachinery prints a ``field.Error``."""

    path: str
    kind: ErrorType
    detail: str
    value: object = None

    @property
    def body(self) -> str:
        """The message without the path: what a ``Status`` cause carries as ``message``."""
        body = f"{self.kind.label}: {go_value(self.value)}" if self.kind.shows_value else self.kind.label
        if self.detail:
            body += f": {self.detail}"
        return body

    def __str__(self) -> str:
        return f"{self.path}: {self.body}"


def aggregate(errors: Sequence[FieldError]) -> str:
    """All errors in one message: one prints as is, several as ``[e1, e2]`` (duplicates once)."""
    messages = list(dict.fromkeys(str(error) for error in errors))
    if len(messages) == 1:
        return messages[0]
    return f"[{', '.join(messages)}]" if messages else ""


def unsupported(path: str, value: object, supported: Sequence[object]) -> FieldError:
    """``field.NotSupported``: the value and every supported one, quoted."""
    detail = "supported values: " + ", ".join(
        json.dumps(option) if isinstance(option, str) else go_value(option) for option in supported
    )
    return FieldError(path, ErrorType.UNSUPPORTED, detail, value)


def go_value(value: object) -> str:
    """A bad value as ErrorBody prints it: nil as the string "null", strings quoted, simple types bare."""
    if value is None:
        return '"null"'
    if isinstance(value, GoNil):
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), default=str, ensure_ascii=False)
