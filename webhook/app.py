"""The admission application: ``POST /mutate-pods`` and ``POST /validate-tfjobs``.

Whatever arrives, the answer is never a 5xx and never a dropped connection, because under
``failurePolicy: Fail`` a webhook error blocks pod creation:

- a review, however odd, gets HTTP 200 with an AdmissionReview in the version received (a bug
  in a decision becomes a denial with code 500 inside the review, logged with its stack);
- a body that is not a review gets a 4xx with a ``metav1.Status``-shaped JSON message: 415 for
  another content type, 400 for non-JSON or a review without ``request``/``uid``; another method
  405, another path 404 (the HTTP-level refusals -- 408, 411, 413, malformed HTTP -- are
  ``http11``'s, counted here through ``refused``).

Each review is logged as JSON with its uid (denials and warnings at INFO, the rest at DEBUG) and
counted in the metrics by path and result.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

import orjson

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
from webhook.http11 import Reply, Request
from webhook.metrics import WebhookMetrics
from webhook.patch_memo import PatchMemo
from webhook.quietlog import LogBudget
from webhook.review import (
    AdmissionRequest,
    Decision,
    MalformedReview,
    Reason,
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
# Reviews carry object and oldObject (each up to ~1.5 MiB in etcd).
DEFAULT_MAX_BODY_BYTES: Final = 4 * 1024 * 1024
JSON_CONTENT_TYPE: Final = "application/json"

Decide = Callable[[AdmissionRequest], Awaitable[Decision]]


@dataclass(frozen=True)
class Intake:
    """How request bodies are read (by ``http11``): the limits, and the budget both endpoints share."""

    max_body_bytes: int
    body_timeout: float
    bodies: BodyBudget


class AdmissionApp:
    """Answers the requests ``http11`` has read whole; ``intake`` says how it reads them."""

    def __init__(
        self, endpoints: dict[str, Decide], metrics: WebhookMetrics, intake: Intake
    ) -> None:
        self.intake = intake
        self._endpoints = endpoints
        self._metrics = metrics
        # labels() takes a lock and builds a tuple: the gauges are looked up once, not per request.
        self._in_flight = {path: metrics.in_flight.labels(path) for path in endpoints}
        self._client_errors = LogBudget()

    async def respond(self, request: Request) -> Reply:
        path = request.path
        decide = self._endpoints.get(path)
        if decide is None:
            return _failure(404, "NotFound", f"no admission endpoint at {clip(path)}")
        if request.method != "POST":
            reply = _failure(405, "MethodNotAllowed", f"{clip(request.method)} is not allowed; use POST")
            return Reply(reply.status, reply.body, headers=(("Allow", "POST"),))
        started = time.perf_counter()
        in_flight = self._in_flight[path]
        in_flight.inc()
        try:
            reply, result = await self._answer(path, request, decide)
        except Exception as exc:
            # Last resort for a defect outside the decision: still an answer with a message.
            logger.exception("could not answer an admission request on %s", path)
            reply = _failure(400, "BadRequest", f"could not process the request: {clip(str(exc), 200)}")
            result = "error"
        finally:
            in_flight.dec()
        self._metrics.observe_request(path, result, time.perf_counter() - started)
        return reply

    def refused(self, path: str, result: str) -> None:
        if path in self._endpoints:
            self._metrics.observe_request(path, result, 0.0)

    async def _answer(self, path: str, request: Request, decide: Decide) -> tuple[Reply, str]:
        content_type = request.content_type
        if content_type != JSON_CONTENT_TYPE:
            return _failure(
                415,
                "UnsupportedMediaType",
                f"expected Content-Type {JSON_CONTENT_TYPE}, got {clip(content_type or 'none')}",
            ), "unsupported_media_type"
        body = request.body
        try:
            document = orjson.loads(body)
            check_depth(document)
            review = parse_review(document)
        except (ValueError, RecursionError) as exc:
            known = isinstance(exc, MalformedReview | TooDeep)
            message = str(exc) if known else f"the body is not valid JSON: {exc}"
            self._client_errors.log(
                logger, logging.INFO, "rejected a malformed admission request on %s: %s",
                path, clip(message, 200),
            )  # fmt: skip
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
                    Reason.INTERNAL_ERROR,
                    500,
                    f"tfgang webhook internal error: {type(exc).__name__}: {clip(str(exc), 200)}",
                )
            try:
                _log_decision(path, review, decision, self._client_errors)
            except Exception:
                logger.exception("could not log the admission decision")
        self._metrics.count_decision(path, operation, decision.allowed, decision.reason)
        payload = build_response(review, decision)
        return Reply(200, orjson.dumps(payload)), ("allowed" if decision.allowed else "denied")


def build_app(
    jobs: JobLookup,
    settings: Settings,
    metrics: WebhookMetrics,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    max_inflight_body_bytes: int = DEFAULT_MAX_INFLIGHT_BODY_BYTES,
) -> AdmissionApp:
    tf_configs = TFConfigMemo(cluster_domain=settings.cluster_domain)
    patches = PatchMemo()

    async def decide_pod(request: AdmissionRequest) -> Decision:
        return await admit_pod(request, jobs, settings, tf_configs, patches)

    intake = Intake(max_body_bytes, body_timeout, BodyBudget(max_inflight_body_bytes))
    return AdmissionApp({MUTATE_PODS_PATH: decide_pod, VALIDATE_TFJOBS_PATH: admit_tfjob}, metrics, intake)


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


def _failure(code: int, reason: str, message: str) -> Reply:
    return Reply(code, status_body(code, reason, message))
