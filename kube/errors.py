"""The one place that maps Kubernetes API failures to exceptions.

Public API:

- ``ApiError(status, reason, message, body=None, retry_after=None)`` and its subclasses
  ``BadRequest`` (400), ``Unauthorized`` (401), ``Forbidden`` (403), ``NotFound`` (404),
  ``MethodNotAllowed`` (405), ``AlreadyExists`` (409, reason AlreadyExists), ``Conflict`` (other 409),
  ``Gone`` (410, also watch ERROR events with code 410), ``UnsupportedMediaType`` (415),
  ``Invalid`` (422), ``TooManyRequests`` (429), ``InternalError`` (500), ``ServiceUnavailable`` (503),
  ``ServerTimeout`` (504, or reason ``Timeout``/``ServerTimeout``), and ``ConnectionFailed``
  (status 0: the request never got an HTTP answer).
- ``from_status(status, body, *, reason=None, headers=None) -> ApiError`` -- from an HTTP answer.
- ``from_status_object(obj) -> ApiError`` -- from a ``metav1.Status`` dict (watch ERROR events).
- ``from_connection_error(exc) -> ConnectionFailed``.
- ``is_retryable(exc) -> bool`` -- whether the same request may succeed later unchanged.
- ``ConfigError`` -- the client configuration (kubeconfig or in-cluster) cannot be loaded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import aiohttp

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "ConfigError",
    "Conflict",
    "ConnectionFailed",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "MethodNotAllowed",
    "NotFound",
    "ServerTimeout",
    "ServiceUnavailable",
    "TooManyRequests",
    "Unauthorized",
    "UnsupportedMediaType",
    "from_connection_error",
    "from_status",
    "from_status_object",
    "is_retryable",
]


class ConfigError(Exception):
    """The API client configuration could not be loaded (bad kubeconfig, not in a cluster)."""


class ApiError(Exception):
    """A request to the Kubernetes API failed; ``status`` is the HTTP code (0: no answer)."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else f"{reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        self.retry_after = retry_after


class BadRequest(ApiError):
    pass


class Unauthorized(ApiError):
    pass


class Forbidden(ApiError):
    pass


class NotFound(ApiError):
    pass


class MethodNotAllowed(ApiError):
    pass


class Conflict(ApiError):
    """409 other than AlreadyExists: usually a stale resourceVersion; re-read and retry."""


class AlreadyExists(ApiError):
    pass


class Gone(ApiError):
    """410: the resourceVersion is too old (compacted); a watcher must relist."""


class UnsupportedMediaType(ApiError):
    pass


class Invalid(ApiError):
    pass


class TooManyRequests(ApiError):
    pass


class InternalError(ApiError):
    pass


class ServiceUnavailable(ApiError):
    pass


class ServerTimeout(ApiError):
    pass


class ConnectionFailed(ApiError):
    """No HTTP answer: connection refused or reset, TLS failure, client-side timeout."""


_BY_STATUS: Mapping[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: ServerTimeout,
}

_RETRYABLE = (ConnectionFailed, TooManyRequests, InternalError, ServiceUnavailable, ServerTimeout)


def _decode_body(body: bytes | str | Mapping[str, Any] | None) -> dict[str, Any] | None:
    if body is None:
        return None
    if isinstance(body, Mapping):
        return dict(body)
    try:
        decoded = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    return decoded if isinstance(decoded, dict) else None


def _retry_after(body: dict[str, Any] | None, headers: Mapping[str, str] | None) -> float | None:
    details = (body or {}).get("details")
    if isinstance(details, dict) and isinstance(details.get("retryAfterSeconds"), int | float):
        return float(details["retryAfterSeconds"])
    header = (headers or {}).get("Retry-After")
    if header is not None:
        try:
            return float(header)
        except ValueError:
            return None
    return None


def from_status(
    status: int,
    body: bytes | str | Mapping[str, Any] | None,
    *,
    reason: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> ApiError:
    """Build the exception for a non-2xx HTTP answer; the body is usually a ``metav1.Status``."""
    decoded = _decode_body(body)
    status_reason = ""
    message = ""
    if decoded is not None:
        status_reason = str(decoded.get("reason") or "")
        message = str(decoded.get("message") or "")
    if not message:
        if isinstance(body, bytes):
            message = body.decode("utf-8", "replace")[:500]
        elif isinstance(body, str):
            message = body[:500]
    reason_text = status_reason or reason or "Unknown"
    cls: type[ApiError]
    if status == 409 and status_reason == "AlreadyExists":
        cls = AlreadyExists
    elif status_reason in ("Timeout", "ServerTimeout") and status >= 500:
        cls = ServerTimeout
    elif status == 410 or status_reason in ("Expired", "Gone"):
        cls = Gone
    else:
        cls = _BY_STATUS.get(status, ApiError)
    return cls(status, reason_text, message or reason_text, decoded, _retry_after(decoded, headers))


def from_status_object(obj: Mapping[str, Any]) -> ApiError:
    """Build the exception for a ``metav1.Status`` object, as carried by a watch ERROR event."""
    code = obj.get("code")
    return from_status(code if isinstance(code, int) else 500, obj)


def from_connection_error(exc: BaseException) -> ConnectionFailed:
    """Wrap a transport failure (aiohttp, OSError, timeout) as a retryable ``ConnectionFailed``."""
    text = str(exc) or type(exc).__name__
    return ConnectionFailed(0, type(exc).__name__, text)


def is_retryable(exc: BaseException) -> bool:
    """True when the failure is transient: the same request may succeed later unchanged."""
    if isinstance(exc, ApiError):
        return isinstance(exc, _RETRYABLE) or exc.status in (502,)
    return isinstance(exc, aiohttp.ClientError | asyncio.TimeoutError | ConnectionError)
