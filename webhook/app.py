"""The admission application: ``POST /mutate-pods`` and ``POST /validate-tfjobs``, answered as
aiohttp's low-level server hands them over (``webhook.server``).

Whatever arrives, the answer is never a 5xx and never a dropped connection, because under
``failurePolicy: Fail`` a webhook error blocks pod creation:

- a review, however odd, gets HTTP 200 with an AdmissionReview in the version received (a bug
  in a decision becomes a denial with code 500 inside the review, logged with its stack);
- a body that is not a review gets a 4xx with a ``metav1.Status``-shaped JSON message: 415 for
  another content type or a ``Content-Encoding`` other than gzip or deflate, 400 for non-JSON,
  JSON nested too deep, or a review without ``request``/``uid``; another method 405, another path
  404; a body over the limit 413 (its declared length, before a byte of it is read; a chunked or
  compressed one as it comes), a body not received within the body deadline 408, an undecodable
  one 400. Malformed HTTP is refused by aiohttp's parser (400, ``webhook.server``), slow headers
  by ``connections.HeaderDeadline`` (408).

Bodies over ``SMALL_BODY`` (and chunked or compressed ones, whose size is known only once read)
take their size from the shared ``BodyBudget`` before they are read, within the body deadline.

Each review is logged as JSON with its uid (denials and warnings at INFO, the rest at DEBUG) and
counted in the metrics by path and result.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

import orjson
from aiohttp import web

from kube.logs import bind_log_fields_of, reset_log_fields
from tfjob.settings import Settings
from webhook.admission import admit_pod, admit_tfjob
from webhook.bounds import TooDeep, check_depth, clip, operation_label
from webhook.cache import JobLookup
from webhook.connections import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_INFLIGHT_BODY_BYTES,
    BodyBudget,
    HeaderDeadline,
    status_body,
)
from webhook.job_memo import MutationMemo
from webhook.metrics import WebhookMetrics
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

logger = logging.getLogger(__name__)
# Denial messages may quote whole values of the object (validation errors): logs keep this much.
MAX_LOGGED_MESSAGE = 512

MUTATE_PODS_PATH: Final = "/mutate-pods"
VALIDATE_TFJOBS_PATH: Final = "/validate-tfjobs"
# Reviews carry object and oldObject (each up to ~1.5 MiB in etcd).
DEFAULT_MAX_BODY_BYTES: Final = 4 * 1024 * 1024
JSON_CONTENT_TYPE: Final = "application/json"
# Bodies this small are read without a budget reservation: kube-apiserver's reviews are a few KiB.
SMALL_BODY: Final = 64 * 1024
ENCODINGS: Final = frozenset({"", "identity", "gzip", "deflate"})

Decide = Callable[[AdmissionRequest], Awaitable[Decision]]


@dataclass(frozen=True)
class Intake:
    """How request bodies are read: the limits, and the budget both endpoints share."""

    max_body_bytes: int
    body_timeout: float
    bodies: BodyBudget


class _Refusal(Exception):
    """A request answered with a ``metav1.Status`` before its review was read; the connection closes."""

    def __init__(self, status: int, reason: str, message: str, result: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.result = status, reason, result


class AdmissionApp:
    """Answers each request aiohttp has parsed the head of; ``intake`` says how bodies are read."""

    def __init__(self, endpoints: dict[str, Decide], metrics: WebhookMetrics, intake: Intake) -> None:
        self.intake = intake
        self._endpoints = endpoints
        self._metrics = metrics
        # Looked up once, not per request.
        self._in_flight = {path: metrics.in_flight(path) for path in endpoints}
        self._client_errors = LogBudget()

    async def handle(self, request: web.BaseRequest, connection: HeaderDeadline | None) -> web.StreamResponse:
        """The answer to ``request``; ``connection`` is told when its body is read and its answer made."""
        if connection is not None:
            connection.head_complete()
        path = request.path
        try:
            body = await self._read_body(request)
        except _Refusal as refusal:
            if path in self._endpoints:
                self._metrics.observe_request(path, refusal.result, 0.0)
            response = _failure(refusal.status, refusal.reason, str(refusal))
            response.force_close()
        else:
            if connection is not None:
                connection.body_read()
            response = await self.respond(request.method, path, _media_type(request), body)
        if connection is not None and connection.answered():
            response.force_close()
        return response

    async def respond(self, method: str, path: str, content_type: str, body: bytes) -> web.Response:
        decide = self._endpoints.get(path)
        if decide is None:
            return _failure(404, "NotFound", f"no admission endpoint at {clip(path)}")
        if method != "POST":
            response = _failure(405, "MethodNotAllowed", f"{clip(method)} is not allowed; use POST")
            response.headers["Allow"] = "POST"
            return response
        started = time.perf_counter()
        in_flight = self._in_flight[path]
        in_flight.count += 1
        try:
            response, result = await self._answer(path, content_type, body, decide)
        except Exception as exc:
            # Last resort for a defect outside the decision: still an answer with a message.
            logger.exception("could not answer an admission request on %s", path)
            response = _failure(400, "BadRequest", f"could not process the request: {clip(str(exc), 200)}")
            result = "error"
        finally:
            in_flight.count -= 1
        self._metrics.observe_request(path, result, time.perf_counter() - started)
        return response

    async def _read_body(self, request: web.BaseRequest) -> bytes:
        intake = self.intake
        limit = intake.max_body_bytes
        encoding = request.headers.get("Content-Encoding", "").strip().lower()
        if encoding not in ENCODINGS:
            raise _Refusal(
                415, "UnsupportedMediaType", f"unsupported Content-Encoding {clip(encoding, 40)!r}",
                "unsupported_media_type",
            )  # fmt: skip
        try:
            declared = request.content_length
        except ValueError:
            # llhttp accepts any run of digits; Python's int() refuses more than 4,300 of them
            # (leading zeros included), which would escape as an internal error.
            raise _Refusal(
                400, "BadRequest", "malformed HTTP request: Content-Length has too many digits", "bad_request"
            ) from None
        if declared is not None and declared > limit:
            raise _too_large(f"the request body of {declared} bytes exceeds {limit}")
        if not request.body_exists:
            return b""
        if request.version >= (1, 1) and request.headers.get("Expect", "").lower() == "100-continue":
            # What aiohttp's Application does for its routes (the low-level server leaves it to us):
            # the client sends its body once told to. HTTP/1.0 has no interim answers.
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        # A chunked or compressed body's size is known only once read: it may take the limit.
        size = declared if declared is not None and encoding in ("", "identity") else limit
        reserved = 0
        try:
            if size <= SMALL_BODY and request.content.is_eof():
                # Arrived whole with its head (kube-apiserver's reviews, nearly always): no deadline
                # timer to make and cancel, no budget to take.
                return await request.read()
            async with asyncio.timeout(intake.body_timeout):
                if size > SMALL_BODY:
                    reserved = await intake.bodies.take(size)
                # Within ``client_max_size`` (the limit): aiohttp counts what a body inflates to.
                return await request.read()
        except TimeoutError:
            message = f"request body not received within {intake.body_timeout:g}s"
            self._client_errors.log(logger, logging.INFO, "%s: %s", clip(request.path), message)
            raise _Refusal(408, "Timeout", message, "timeout") from None
        except web.HTTPRequestEntityTooLarge:
            raise _too_large(f"the request body exceeds {limit} bytes (decoded)") from None
        except Exception as exc:  # the payload's own errors: cut short, undecodable, bad chunks
            message = f"could not read the request body: {clip(str(exc) or type(exc).__name__, 200)}"
            self._client_errors.log(logger, logging.INFO, "%s: %s", clip(request.path), message)
            raise _Refusal(400, "BadRequest", message, "bad_request") from None
        finally:
            if reserved:
                intake.bodies.give_back(reserved)

    async def _answer(
        self, path: str, content_type: str, body: bytes, decide: Decide
    ) -> tuple[web.Response, str]:
        if content_type != JSON_CONTENT_TYPE:
            return _failure(
                415,
                "UnsupportedMediaType",
                f"expected Content-Type {JSON_CONTENT_TYPE}, got {clip(content_type or 'none')}",
            ), "unsupported_media_type"
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
        bound = bind_log_fields_of(_ReviewLogFields(review))
        try:
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
        finally:
            reset_log_fields(bound)
        self._metrics.count_decision(path, operation, decision.allowed, decision.reason)
        payload = build_response(review, decision)
        return _json(200, orjson.dumps(payload)), ("allowed" if decision.allowed else "denied")


def build_app(
    jobs: JobLookup,
    settings: Settings,
    metrics: WebhookMetrics,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    max_inflight_body_bytes: int = DEFAULT_MAX_INFLIGHT_BODY_BYTES,
) -> AdmissionApp:
    memo = MutationMemo(cluster_domain=settings.cluster_domain)
    # A partial, not a closure: one coroutine less per review.
    decide_pod = functools.partial(admit_pod, jobs=jobs, settings=settings, memo=memo)
    intake = Intake(max_body_bytes, body_timeout, BodyBudget(max_inflight_body_bytes))
    return AdmissionApp({MUTATE_PODS_PATH: decide_pod, VALIDATE_TFJOBS_PATH: admit_tfjob}, metrics, intake)


class _ReviewLogFields(Mapping[str, object]):
    """The fields every log record of a review carries (its uid first), made only when a record
    is logged: at the default level an allowed review logs nothing, and clipping and binding its
    values for nothing cost 15k of a review's 319k instructions (``bench/review_cost.py``)."""

    __slots__ = ("_review",)
    _NAMES: Final = ("uid", "operation", "namespace", "dry_run")

    def __init__(self, review: AdmissionRequest) -> None:
        self._review = review

    def __getitem__(self, name: str) -> object:
        review = self._review
        if name == "uid":
            return clip(review.uid)
        if name == "operation":
            return clip(review.operation)
        if name == "namespace":
            return clip(review.namespace)
        if name == "dry_run":
            return review.dry_run
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._NAMES)

    def __len__(self) -> int:
        return len(self._NAMES)


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


def _media_type(request: web.BaseRequest) -> str:
    """The media type without parameters, lower-cased; ``""`` when there is none (aiohttp's
    ``content_type`` would say ``application/octet-stream``)."""
    value = request.headers.get("Content-Type", "")
    if value == JSON_CONTENT_TYPE:  # what every caller sends: no parsing
        return value
    return value.partition(";")[0].strip().lower()


def _too_large(message: str) -> _Refusal:
    return _Refusal(413, "RequestEntityTooLarge", message, "too_large")


def _json(status: int, body: bytes) -> web.Response:
    return web.Response(status=status, body=body, content_type=JSON_CONTENT_TYPE)


def _failure(code: int, reason: str, message: str) -> web.Response:
    return _json(code, status_body(code, reason, message))
