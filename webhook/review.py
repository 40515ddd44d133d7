"""AdmissionReview parsing and response building, pure and defensive (``admission.k8s.io`` v1, v1beta1).

A review is answered in the apiVersion it arrived in, with ``response.uid`` echoing the request.
Everything the API server may leave out (``name``, ``object.metadata.namespace``, ``options``,
``dryRun``, ``oldObject``, ``requestKind``...) is optional here; only what is needed to answer at
all is required: the envelope's apiVersion and kind, a ``request`` object and its ``uid``. A body
without those gets ``MalformedReview`` (HTTP 400 with a message), never a crash.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Literal, NamedTuple, NotRequired, TypedDict

import orjson

ADMISSION_V1: Final = "admission.k8s.io/v1"
ADMISSION_V1BETA1: Final = "admission.k8s.io/v1beta1"
SUPPORTED_VERSIONS: Final = (ADMISSION_V1, ADMISSION_V1BETA1)
REVIEW_KIND: Final = "AdmissionReview"
OPERATIONS: Final = ("CREATE", "UPDATE", "DELETE", "CONNECT")

JSONObject = dict[str, Any]


class StatusDetails(TypedDict):
    code: int
    message: str
    reason: NotRequired[str]


class AdmissionResponse(TypedDict):
    uid: str
    allowed: bool
    status: NotRequired[StatusDetails]
    patchType: NotRequired[Literal["JSONPatch"]]
    patch: NotRequired[str]
    warnings: NotRequired[list[str]]


class AdmissionReviewResponse(TypedDict):
    apiVersion: str
    kind: str
    response: AdmissionResponse


class MalformedReview(ValueError):
    """A body that cannot be answered with an AdmissionReview: the HTTP answer is 400."""


# Named tuples, not frozen dataclasses: one of each is made per review, and a frozen dataclass sets
# each field through ``object.__setattr__`` (the request's twelve cost more than the rest of parsing).
class GroupVersionKind(NamedTuple):
    group: str = ""
    version: str = ""
    kind: str = ""


class AdmissionRequest(NamedTuple):
    api_version: str
    uid: str
    operation: str
    kind: GroupVersionKind
    resource: str
    sub_resource: str
    namespace: str
    name: str
    object: JSONObject | None
    old_object: JSONObject | None
    dry_run: bool
    username: str


class Reason(StrEnum):
    """Why a handler decided as it did: a metric label and log field, so a small fixed set."""

    MUTATED = "mutated"
    UNCHANGED = "unchanged"
    IGNORED = "ignored"
    MALFORMED = "malformed"
    NO_TFJOB = "tfjob-not-found"
    BAD_REPLICA = "replica-not-in-job"
    NO_CONTAINER = "no-tensorflow-container"
    LOOKUP_FAILED = "tfjob-lookup-failed"
    NOT_CONTROLLED = "not-controlled-by-tfjob"
    VALID = "valid"
    INVALID = "invalid"
    INTERNAL_ERROR = "internal-error"


@dataclass(frozen=True)
class Decision:
    """What a handler decided."""

    allowed: bool
    reason: Reason
    code: int = 200
    message: str = ""
    patch: Sequence[JSONObject] = ()
    warnings: Sequence[str] = field(default_factory=tuple)
    # ``patch`` already encoded (webhook.job_memo), so a remembered decision is not encoded again.
    encoded_patch: str = ""


def allow(reason: Reason, *, patch: Sequence[JSONObject] = (), warnings: Sequence[str] = ()) -> Decision:
    return Decision(allowed=True, reason=reason, patch=tuple(patch), warnings=tuple(warnings))


def deny(reason: Reason, code: int, message: str, *, warnings: Sequence[str] = ()) -> Decision:
    return Decision(allowed=False, reason=reason, code=code, message=message, warnings=tuple(warnings))


def parse_review(body: object) -> AdmissionRequest:
    """The request of an AdmissionReview body (already JSON-decoded)."""
    if not isinstance(body, dict):
        raise MalformedReview("the body is not a JSON object: expected an AdmissionReview")
    api_version = body.get("apiVersion")
    if api_version != ADMISSION_V1 and api_version != ADMISSION_V1BETA1:
        raise MalformedReview(
            f"unsupported AdmissionReview apiVersion {_show(api_version)}: "
            f"expected one of {', '.join(SUPPORTED_VERSIONS)}"
        )
    if body.get("kind") != REVIEW_KIND:
        raise MalformedReview(f"unsupported kind {_show(body.get('kind'))}: expected {REVIEW_KIND}")
    request = body.get("request")
    if request is None:
        raise MalformedReview("the AdmissionReview has no request")
    if not isinstance(request, dict):
        raise MalformedReview("the AdmissionReview's request is not an object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise MalformedReview("the AdmissionReview's request has no uid")
    # Inline type checks, not a helper call per field: this runs on every review, and the calls
    # cost as much as the rest of parsing (bench/review_cost.py).
    kind = request.get("kind")
    if type(kind) is not dict:
        kind = _NOTHING
    resource = request.get("resource")
    user_info = request.get("userInfo")
    pod = request.get("object")
    old = request.get("oldObject")
    return AdmissionRequest(
        api_version,
        uid,
        _text(request.get("operation")),
        GroupVersionKind(_text(kind.get("group")), _text(kind.get("version")), _text(kind.get("kind"))),
        _text(resource.get("resource")) if type(resource) is dict else "",
        _text(request.get("subResource")),
        _text(request.get("namespace")),
        _text(request.get("name")),
        pod if type(pod) is dict else None,
        old if type(old) is dict else None,
        request.get("dryRun") is True,
        _text(user_info.get("username")) if type(user_info) is dict else "",
    )


_NOTHING: Final[JSONObject] = {}


def _text(value: object) -> str:
    return value if type(value) is str else ""


def build_response(request: AdmissionRequest, decision: Decision) -> AdmissionReviewResponse:
    return review_response(request.api_version, request.uid, decision)


def review_response(api_version: str, uid: str, decision: Decision) -> AdmissionReviewResponse:
    response: AdmissionResponse = {"uid": uid, "allowed": decision.allowed}
    if not decision.allowed:
        response["status"] = {
            "code": decision.code,
            "message": decision.message,
            "reason": _status_reason(decision.code),
        }
    if decision.allowed and decision.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = decision.encoded_patch or encode_patch(decision.patch)
    if decision.warnings:
        response["warnings"] = list(decision.warnings)
    return {"apiVersion": api_version, "kind": REVIEW_KIND, "response": response}


def encode_patch(operations: Sequence[JSONObject]) -> str:
    return base64.b64encode(orjson.dumps(list(operations))).decode("ascii")


def decode_patch(encoded: str) -> list[JSONObject]:
    decoded = json.loads(base64.b64decode(encoded, validate=True))
    if not isinstance(decoded, list):
        raise ValueError("a JSON patch is a list of operations")
    return decoded


_REASONS: Final = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    422: "Invalid",
    500: "InternalError",
    503: "ServiceUnavailable",
}


def _status_reason(code: int) -> str:
    return _REASONS.get(code, "Forbidden" if 400 <= code < 500 else "InternalError")


def _show(value: object) -> str:
    text = (
        json.dumps(value)
        if value is None or isinstance(value, str | int | float | bool)
        else type(value).__name__
    )
    return text if len(text) <= 80 else text[:77] + "..."
