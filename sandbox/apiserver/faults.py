"""Fault injection: the ways a kube-apiserver fails at 3 a.m., on demand.

One ``Faults`` object per server holds the standing faults that every request passes through
(``gate``): a fraction of requests answered 429 (with ``Retry-After``) or 500 and a fixed added
latency. One-shot faults act on the server at once: an outage (the listener is closed, so new
connections are refused, every open connection and watch is dropped, and after N seconds the same
server with the same state listens on the same port again), dropping every open watch, and
compacting the history so that resuming watches get 410 Gone.

Tests use it through ``ApiServer.faults``/``ApiServer.outage`` (or ``ApiServerHandle``), operators
through ``tfgang-sandbox up --fault-*`` flags and the ops endpoint ``/sandbox/faults``, which takes
a JSON ``FaultRequest`` (``kubectl create --raw /sandbox/faults -f faults.json``), shows the
current faults and what they did (``kubectl get --raw /sandbox/faults``) and clears the standing
faults (``kubectl delete --raw /sandbox/faults``). Paths under ``/sandbox/`` are never faulted, so
the faults can always be cleared.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, TypedDict

from sandbox.apiserver import errors

FAULT_CODES: Final = (429, 500, 503)
MAX_LATENCY: Final = 10.0
MAX_OUTAGE: Final = 600.0
MAX_RETRY_AFTER: Final = 60
EXEMPT_PREFIX: Final = "/sandbox/"


class FaultControl(Protocol):
    """The server side of the one-shot faults."""

    def act(self, outage: float, drop_watches: bool, compact: bool) -> None: ...


class ErrorsWire(TypedDict, total=False):
    fraction: float
    code: int
    retryAfterSeconds: int


class FaultRequest(TypedDict, total=False):
    """What ``POST /sandbox/faults`` takes; every field is optional."""

    errors: ErrorsWire | None
    latencySeconds: float
    outageSeconds: float
    dropWatches: bool
    compact: bool


@dataclass(frozen=True)
class ErrorRule:
    """Answer ``fraction`` of the requests with ``code`` instead of serving them."""

    fraction: float
    code: int = 429
    retry_after: int = 1

    def __post_init__(self) -> None:
        if not 0.0 <= self.fraction <= 1.0:
            raise ValueError(f"the error fraction must be within 0..1, not {self.fraction}")
        if self.code not in FAULT_CODES:
            raise ValueError(f"the error code must be one of {FAULT_CODES}, not {self.code}")
        if not 0 <= self.retry_after <= MAX_RETRY_AFTER:
            raise ValueError(f"retryAfterSeconds must be within 0..{MAX_RETRY_AFTER}")

    def error(self) -> errors.ApiError:
        if self.code == 429:
            message = "the server has received too many requests and has asked us to try again later"
            details = {"retryAfterSeconds": self.retry_after}
            headers = {"Retry-After": str(self.retry_after)}
            return errors.ApiError(429, "TooManyRequests", message, details, headers)
        if self.code == 503:
            return errors.ApiError(
                503, "ServiceUnavailable", "the server is currently unable to handle the request"
            )
        return errors.internal_error("injected fault")

    def wire(self) -> ErrorsWire:
        return {"fraction": self.fraction, "code": self.code, "retryAfterSeconds": self.retry_after}


@dataclass(frozen=True)
class StandingFaults:
    """The faults every request passes through until cleared."""

    errors: ErrorRule | None = None
    latency: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.latency <= MAX_LATENCY:
            raise ValueError(f"the latency must be within 0..{MAX_LATENCY} seconds, not {self.latency}")


@dataclass
class Faults:
    standing: StandingFaults = field(default_factory=StandingFaults)
    rng: random.Random = field(default_factory=random.Random)
    injected: Counter[str] = field(default_factory=Counter)
    """What the faults did so far: ``errors-429``, ``delayed``, ``outages``, ``compactions``, ..."""
    outage_until: float = 0.0
    """Monotonic time the current outage ends (0: none)."""

    def clear(self) -> None:
        self.standing = StandingFaults()

    def gate(self, path: str) -> tuple[float, errors.ApiError | None]:
        """For one request: seconds to delay it, and the error to answer instead (or None)."""
        if path.startswith(EXEMPT_PREFIX):
            return 0.0, None
        standing = self.standing
        delay = standing.latency
        if delay:
            self.injected["delayed"] += 1
        rule = standing.errors
        if rule is not None and rule.fraction > 0 and self.rng.random() < rule.fraction:
            self.injected[f"errors-{rule.code}"] += 1
            return delay, rule.error()
        return delay, None

    def wire(self, now: float) -> dict[str, Any]:
        rule = self.standing.errors
        return {
            "errors": rule.wire() if rule is not None else None,
            "latencySeconds": self.standing.latency,
            "outageRemainingSeconds": round(max(0.0, self.outage_until - now), 3),
            "injected": dict(sorted(self.injected.items())),
        }


@dataclass(frozen=True)
class ParsedRequest:
    standing: StandingFaults | None
    """New standing faults, or None to keep the current ones."""
    outage: float
    drop_watches: bool
    compact: bool


def _number(body: Mapping[str, Any], key: str, limit: float) -> float:
    value = body.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= limit:
        raise errors.bad_request(f"{key} must be a number within 0..{limit:g}")
    return float(value)


def _flag(body: Mapping[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise errors.bad_request(f"{key} must be true or false")
    return value


def _errors(value: Any) -> ErrorRule | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) - {"fraction", "code", "retryAfterSeconds"}:
        raise errors.bad_request("errors must be an object with fraction, code and retryAfterSeconds")
    fraction = value.get("fraction", 0)
    code = value.get("code", 429)
    retry_after = value.get("retryAfterSeconds", 1)
    if isinstance(fraction, bool) or not isinstance(fraction, int | float):
        raise errors.bad_request("errors.fraction must be a number")
    if isinstance(code, bool) or not isinstance(code, int):
        raise errors.bad_request("errors.code must be an integer")
    if isinstance(retry_after, bool) or not isinstance(retry_after, int):
        raise errors.bad_request("errors.retryAfterSeconds must be an integer")
    try:
        return ErrorRule(float(fraction), code, retry_after)
    except ValueError as error:
        raise errors.bad_request(str(error)) from error


def parse_request(body: Any, current: StandingFaults) -> ParsedRequest:
    """Check a ``FaultRequest``; raises a 400 ``ApiError`` naming the first bad field."""
    if not isinstance(body, Mapping):
        raise errors.bad_request("the fault request must be a JSON object")
    unknown = set(body) - set(FaultRequest.__annotations__)
    if unknown:
        raise errors.bad_request(f"unknown fault fields: {', '.join(sorted(map(str, unknown)))[:200]}")
    standing: StandingFaults | None = None
    if "errors" in body or "latencySeconds" in body:
        rule = _errors(body["errors"]) if "errors" in body else current.errors
        latency = current.latency
        if "latencySeconds" in body:
            latency = _number(body, "latencySeconds", MAX_LATENCY)
        standing = StandingFaults(rule, latency)
    return ParsedRequest(
        standing,
        _number(body, "outageSeconds", MAX_OUTAGE),
        _flag(body, "dropWatches"),
        _flag(body, "compact"),
    )


def apply_request(faults: Faults, control: FaultControl | None, body: Any) -> None:
    """Check a ``FaultRequest`` and carry it out: standing faults replaced, one-shot faults done."""
    parsed = parse_request(body, faults.standing)
    if parsed.standing is not None:
        faults.standing = parsed.standing
    if control is not None:
        control.act(parsed.outage, parsed.drop_watches, parsed.compact)
