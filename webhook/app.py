"""The HTTPS admission application: ``POST /mutate-pods`` and ``POST /validate-tfjobs``.

Whatever arrives, the answer is never a 5xx and never a dropped connection, because under
``failurePolicy: Fail`` a webhook error blocks pod creation:

- a review, however odd, gets HTTP 200 with an AdmissionReview in the version received (a bug
  in a decision becomes a denial with code 500 inside the review, logged with its stack);
- a body that is not a review gets a 4xx with a ``metav1.Status``-shaped JSON message: 415 for
  another content type, 400 for non-JSON or a review without ``request``/``uid``, 413 over the
  body limit; another method gets aiohttp's 405, another path 404.

Each review is logged as JSON with its uid (denials and warnings at INFO, the rest at DEBUG) and
counted in the metrics by path and result.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson
from aiohttp import web

from kube.logs import log_fields
from tfjob.settings import Settings
from webhook.admission import admit_pod, admit_tfjob
from webhook.bounds import TooDeep, check_depth, clip, operation_label
from webhook.cache import JobLookup
from webhook.connections import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_INFLIGHT_BODY_BYTES,
    BodyBudget,
    status_body,
)
from webhook.metrics import WebhookMetrics
from webhook.patch_memo import PatchMemo
from webhook.quietlog import LogBudget
from webhook.review import (
    AdmissionRequest,
    Decision,
    MalformedReview,
    build_response,
    deny,
    parse_review,
)
from webhook.tfconfig_memo import TFConfigMemo

logger = logging.getLogger(__name__)
# Denial messages may quote whole values of the object (validation errors): logs keep this much.
MAX_LOGGED_MESSAGE = 512

MUTATE_PODS_PATH: Final = "/mutate-pods"
VALIDATE_TFJOBS_PATH: Final = "/validate-tfjobs"
# Reviews carry object and oldObject (each up to ~1.5 MiB in etcd): aiohttp's 1 MiB default is too small.
DEFAULT_MAX_BODY_BYTES: Final = 4 * 1024 * 1024
JSON_CONTENT_TYPE: Final = "application/json"
SMALL_BODY: Final = 64 * 1024

Decide = Callable[[AdmissionRequest], Awaitable[Decision]]


@dataclass(frozen=True)
class _Intake:
    """How request bodies are read: the limits, and the budgets shared by both endpoints."""

    max_bytes: int
    timeout: float
    bodies: BodyBudget
    client_errors: LogBudget


def build_app(
    jobs: JobLookup,
    settings: Settings,
    metrics: WebhookMetrics,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    max_inflight_body_bytes: int = DEFAULT_MAX_INFLIGHT_BODY_BYTES,
) -> web.Application:
    app = web.Application(client_max_size=max_body_bytes)

    tf_configs = TFConfigMemo(cluster_domain=settings.cluster_domain)
    patches = PatchMemo()

    async def decide_pod(request: AdmissionRequest) -> Decision:
        return await admit_pod(request, jobs, settings, tf_configs, patches)

    intake = _Intake(max_body_bytes, body_timeout, BodyBudget(max_inflight_body_bytes), LogBudget())
    for path, decide in ((MUTATE_PODS_PATH, decide_pod), (VALIDATE_TFJOBS_PATH, admit_tfjob)):
        app.router.add_post(path, _endpoint(path, decide, metrics, intake))
    return app


def _endpoint(
    path: str, decide: Decide, metrics: WebhookMetrics, intake: _Intake
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    in_flight = metrics.in_flight.labels(path)

    async def handle(http_request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        in_flight.inc()
        try:
            response, result = await _answer(path, http_request, decide, metrics, intake)
        except Exception as exc:
            # Last resort for a defect outside the decision: still an answer with a message.
            logger.exception("could not answer an admission request on %s", path)
            response, result = (
                _failure(400, "BadRequest", f"could not process the request: {clip(str(exc), 200)}"),
                "error",
            )
        finally:
            in_flight.dec()
        metrics.observe_request(path, result, time.perf_counter() - started)
        return response

    return handle


async def _read_body(
    path: str, http_request: web.Request, intake: _Intake
) -> bytes | tuple[web.Response, str]:
    """The body, or the answer when it cannot be had: too large, unreadable or too slow."""
    declared = http_request.content_length
    if declared is not None and declared > intake.max_bytes:
        # Known before reading a byte (aiohttp would read up to the limit first).
        response = _failure(
            413, "RequestEntityTooLarge", f"the request body of {declared} bytes exceeds {intake.max_bytes}"
        )
        response.force_close()
        return response, "too_large"
    try:
        if declared is not None and declared <= SMALL_BODY and http_request.content.is_eof():
            # Already received whole (a review is a few KiB): no deadline or budget to wait for.
            return await http_request.read()
        async with (
            asyncio.timeout(intake.timeout),
            intake.bodies.reserve(intake.max_bytes if declared is None else declared),
        ):
            return await http_request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        return _failure(413, "RequestEntityTooLarge", exc.text or "request body too large"), "too_large"
    except web.RequestPayloadError as exc:
        message = f"could not read the request body: {clip(str(exc), 200)}"
        intake.client_errors.log(logger, logging.INFO, "%s: %s", path, message)
        response = _failure(400, "BadRequest", message)
        response.force_close()
        return response, "bad_request"
    except TimeoutError:
        message = f"request body not received within {intake.timeout:g}s"
        intake.client_errors.log(logger, logging.INFO, "%s: %s", path, message)
        response = _failure(408, "Timeout", message)
        response.force_close()  # the rest of the body is still on its way
        return response, "timeout"


async def _answer(
    path: str, http_request: web.Request, decide: Decide, metrics: WebhookMetrics, intake: _Intake
) -> tuple[web.Response, str]:
    if http_request.content_type != JSON_CONTENT_TYPE:
        return _failure(
            415,
            "UnsupportedMediaType",
            f"expected Content-Type {JSON_CONTENT_TYPE}, got {clip(http_request.content_type or 'none')}",
        ), "unsupported_media_type"
    body = await _read_body(path, http_request, intake)
    if isinstance(body, tuple):
        return body
    try:
        document = orjson.loads(body)
        check_depth(document, body)
        review = parse_review(document)
    except (ValueError, RecursionError) as exc:
        message = (
            str(exc) if isinstance(exc, MalformedReview | TooDeep) else f"the body is not valid JSON: {exc}"
        )
        intake.client_errors.log(
            logger, logging.INFO, "rejected a malformed admission request on %s: %s", path, clip(message, 200)
        )
        return _failure(400, "BadRequest", message), "bad_request"

    operation = operation_label(review.operation)
    with log_fields(
        uid=clip(review.uid),
        operation=clip(review.operation),
        namespace=clip(review.namespace),
        dry_run=review.dry_run,
    ):
        try:
            decision = await decide(review)
        except Exception as exc:
            logger.exception("admission failed on %s", path)
            decision = deny(
                "internal-error",
                500,
                f"tfgang webhook internal error: {type(exc).__name__}: {clip(str(exc), 200)}",
            )
        try:
            _log_decision(path, review, decision, intake.client_errors)
        except Exception:
            logger.exception("could not log the admission decision")
    metrics.count_decision(path, operation, decision.allowed, decision.reason)
    payload = build_response(review, decision)
    return web.Response(body=_dumps(payload), content_type=JSON_CONTENT_TYPE), (
        "allowed" if decision.allowed else "denied"
    )


def _log_decision(path: str, review: AdmissionRequest, decision: Decision, client_errors: LogBudget) -> None:
    level = logging.INFO if (not decision.allowed or decision.warnings) else logging.DEBUG
    if not logger.isEnabledFor(level):
        return
    outcome = "allowed" if decision.allowed else f"denied ({decision.code}): {decision.message}"
    arguments = (path, clip(review.operation), clip(review.kind.kind), clip(outcome, MAX_LOGGED_MESSAGE))
    extra = {
        "kind": clip(review.kind.kind),
        "object_name": clip(review.name),
        "allowed": decision.allowed,
        "reason": decision.reason,
        "patch_operations": len(decision.patch),
        "warnings": [clip(warning, 200) for warning in decision.warnings],
    }
    if decision.code == 400:
        # A malformed review is the caller's mistake, and anyone can send many.
        client_errors.log(logger, level, "%s %s %s: %s", *arguments, extra=extra)
    else:
        logger.log(level, "%s %s %s: %s", *arguments, extra=extra)


def _failure(code: int, reason: str, message: str) -> web.Response:
    return web.Response(status=code, body=status_body(code, reason, message), content_type=JSON_CONTENT_TYPE)


def _dumps(document: Any) -> bytes:
    return orjson.dumps(document)
