"""HTTP failures map to one exception hierarchy; retryability is decided in one place."""

from __future__ import annotations

import json

import aiohttp
import pytest

from kube import errors
from kube.errors import from_status, from_status_object, is_retryable


def status_body(code: int, reason: str, message: str = "msg", **extra: object) -> bytes:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                       "reason": reason, "message": message, **extra}).encode()


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (400, "BadRequest", errors.BadRequest),
        (401, "Unauthorized", errors.Unauthorized),
        (403, "Forbidden", errors.Forbidden),
        (404, "NotFound", errors.NotFound),
        (409, "AlreadyExists", errors.AlreadyExists),
        (409, "Conflict", errors.Conflict),
        (410, "Expired", errors.Gone),
        (415, "UnsupportedMediaType", errors.UnsupportedMediaType),
        (422, "Invalid", errors.Invalid),
        (429, "TooManyRequests", errors.TooManyRequests),
        (500, "InternalError", errors.InternalError),
        (500, "ServerTimeout", errors.ServerTimeout),
        (503, "ServiceUnavailable", errors.ServiceUnavailable),
        (504, "Timeout", errors.ServerTimeout),
        (418, "Teapot", errors.ApiError),
    ],
)
def test_status_codes_and_reasons_map_to_exception_types(code: int, reason: str, expected: type) -> None:
    err = from_status(code, status_body(code, reason, "the message"))
    assert type(err) is expected
    assert err.status == code
    assert err.reason == reason
    assert err.message == "the message"
    assert err.body is not None and err.body["code"] == code


def test_already_exists_is_not_a_conflict() -> None:
    assert not isinstance(from_status(409, status_body(409, "AlreadyExists")), errors.Conflict)


def test_non_json_body_keeps_the_text() -> None:
    err = from_status(502, b"<html>bad gateway</html>", reason="Bad Gateway")
    assert err.reason == "Bad Gateway"
    assert "bad gateway" in err.message
    assert err.body is None


def test_retry_after_comes_from_status_details_or_header() -> None:
    err = from_status(429, status_body(429, "TooManyRequests", details={"retryAfterSeconds": 3}))
    assert err.retry_after == 3.0
    err = from_status(429, b"", headers={"Retry-After": "7"})
    assert err.retry_after == 7.0


def test_watch_error_object_410_is_gone() -> None:
    err = from_status_object({"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
    assert isinstance(err, errors.Gone)
    assert err.message == "too old"


@pytest.mark.parametrize(
    ("exc", "retryable"),
    [
        (from_status(503, b""), True),
        (from_status(500, b""), True),
        (from_status(504, b""), True),
        (from_status(429, b""), True),
        (from_status(502, b""), True),
        (errors.ConnectionFailed(0, "ClientOSError", "refused"), True),
        (aiohttp.ClientConnectionError("reset"), True),
        (TimeoutError(), True),
        (from_status(404, b""), False),
        (from_status(409, b""), False),
        (from_status(422, b""), False),
        (from_status(403, b""), False),
        (ValueError("bug"), False),
    ],
)
def test_is_retryable(exc: BaseException, retryable: bool) -> None:
    assert is_retryable(exc) is retryable
