"""Kubernetes ``Status`` bodies, worded and shaped exactly as kube-apiserver writes them."""

from __future__ import annotations

from dataclasses import dataclass, field

from sandbox.apiserver.jsonobj import JsonObj


@dataclass(frozen=True)
class Cause:
    reason: str
    message: str
    field: str = ""

    def wire(self) -> JsonObj:
        body: JsonObj = {"reason": self.reason, "message": self.message}
        if self.field:
            body["field"] = self.field
        return body


@dataclass
class ApiError(Exception):
    """An error answered to the client as a ``Status`` body with ``code``."""

    code: int
    reason: str
    message: str
    details: JsonObj | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def body(self) -> JsonObj:
        return status_body(self.code, self.reason, self.message, self.details)


def status_body(code: int, reason: str, message: str, details: JsonObj | None = None) -> JsonObj:
    body: JsonObj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
    }
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def success_body(details: JsonObj | None = None) -> JsonObj:
    body: JsonObj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details is not None:
        body["details"] = details
    return body


def _details(name: str, group: str, kind: str) -> JsonObj:
    details: JsonObj = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{_qualified(resource, group)} "{name}" not found', _details(name, group, resource)
    )


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists',
        _details(name, group, resource),
    )


def conflict(resource: str, group: str, name: str, problem: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {problem}',
        _details(name, group, resource),
    )


OBJECT_MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> ApiError:
    """422 Invalid: ``<Kind>.<group> "<name>" is invalid: <field>: <message>`` (kube's aggregate wording)."""
    qualified_kind = f"{kind}.{group}" if group else kind
    parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    details = _details(name, group, kind)
    details["causes"] = [c.wire() for c in causes]
    return ApiError(422, "Invalid", f'{qualified_kind} "{name}" is invalid: {summary}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(resource: str, group: str, name: str, problem: str) -> ApiError:
    target = f'{_qualified(resource, group)} "{name}"' if name else _qualified(resource, group)
    return ApiError(403, "Forbidden", f"{target} is forbidden: {problem}", _details(name, group, resource))


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message, {})


def unsupported_media_type(accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted),
        {},
    )


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def internal_error(message: str) -> ApiError:
    return ApiError(
        500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]}
    )


def page_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def timeout(message: str) -> ApiError:
    return ApiError(504, "Timeout", message)
