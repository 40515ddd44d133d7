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

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

import orjson
from aiohttp import web

from kube.logs import log_fields
from tfjob.settings import Settings
from webhook.admission import admit_pod, admit_tfjob
from webhook.cache import JobLookup
from webhook.metrics import WebhookMetrics
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

MUTATE_PODS_PATH: Final = "/mutate-pods"
VALIDATE_TFJOBS_PATH: Final = "/validate-tfjobs"
# Reviews carry object and oldObject (each up to ~1.5 MiB in etcd): aiohttp's 1 MiB default is too small.
DEFAULT_MAX_BODY_BYTES: Final = 4 * 1024 * 1024
JSON_CONTENT_TYPE: Final = "application/json"

Decide = Callable[[AdmissionRequest], Awaitable[Decision]]


def build_app(
    jobs: JobLookup,
    settings: Settings,
    metrics: WebhookMetrics,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> web.Application:
    app = web.Application(client_max_size=max_body_bytes)

    tf_configs = TFConfigMemo(cluster_domain=settings.cluster_domain)

    async def decide_pod(request: AdmissionRequest) -> Decision:
        return await admit_pod(request, jobs, settings, tf_configs)

    app.router.add_post(MUTATE_PODS_PATH, _endpoint(MUTATE_PODS_PATH, decide_pod, metrics))
    app.router.add_post(VALIDATE_TFJOBS_PATH, _endpoint(VALIDATE_TFJOBS_PATH, admit_tfjob, metrics))
    return app


def _endpoint(
    path: str, decide: Decide, metrics: WebhookMetrics
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    in_flight = metrics.in_flight.labels(path)

    async def handle(http_request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        in_flight.inc()
        try:
            response, result = await _answer(path, http_request, decide, metrics)
        except Exception as exc:
            # Last resort for a defect outside the decision: still an answer with a message.
            logger.exception("could not answer an admission request on %s", path)
            response, result = _failure(400, "BadRequest", f"could not process the request: {exc}"), "error"
        finally:
            in_flight.dec()
        metrics.observe_request(path, result, time.perf_counter() - started)
        return response

    return handle


async def _answer(
    path: str, http_request: web.Request, decide: Decide, metrics: WebhookMetrics
) -> tuple[web.Response, str]:
    if http_request.content_type != JSON_CONTENT_TYPE:
        return _failure(
            415,
            "UnsupportedMediaType",
            f"expected Content-Type {JSON_CONTENT_TYPE}, got {http_request.content_type or 'none'}",
        ), "unsupported_media_type"
    try:
        body = await http_request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        return _failure(413, "RequestEntityTooLarge", exc.text or "request body too large"), "too_large"
    try:
        document = orjson.loads(body)
        review = parse_review(document)
    except (ValueError, RecursionError) as exc:
        message = str(exc) if isinstance(exc, MalformedReview) else f"the body is not valid JSON: {exc}"
        logger.info("rejected a malformed admission request on %s: %s", path, message)
        return _failure(400, "BadRequest", message), "bad_request"

    with log_fields(
        uid=review.uid, operation=review.operation, namespace=review.namespace, dry_run=review.dry_run
    ):
        try:
            decision = await decide(review)
        except Exception as exc:
            logger.exception("admission failed on %s", path)
            decision = deny(
                "internal-error", 500, f"tfgang webhook internal error: {type(exc).__name__}: {exc}"
            )
        try:
            _log_decision(path, review, decision)
        except Exception:
            logger.exception("could not log the admission decision")
    metrics.count_decision(path, review.operation or "none", decision.allowed, decision.reason)
    payload = build_response(review, decision)
    return web.Response(body=_dumps(payload), content_type=JSON_CONTENT_TYPE), (
        "allowed" if decision.allowed else "denied"
    )


def _log_decision(path: str, review: AdmissionRequest, decision: Decision) -> None:
    level = logging.INFO if (not decision.allowed or decision.warnings) else logging.DEBUG
    if not logger.isEnabledFor(level):
        return
    logger.log(
        level,
        "%s %s %s: %s",
        path,
        review.operation,
        review.kind.kind,
        "allowed" if decision.allowed else f"denied ({decision.code}): {decision.message}",
        extra={
            "kind": review.kind.kind,
            "object_name": review.name,
            "allowed": decision.allowed,
            "reason": decision.reason,
            "patch_operations": len(decision.patch),
            "warnings": list(decision.warnings),
        },
    )


def _failure(code: int, reason: str, message: str) -> web.Response:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return web.Response(status=code, body=_dumps(status), content_type=JSON_CONTENT_TYPE)


def _dumps(document: Any) -> bytes:
    return orjson.dumps(document)
