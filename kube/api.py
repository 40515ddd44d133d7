"""Generic CRUD and watch over any ``Resource``, with raw dicts in and out.

Every request -- unary, watch or log stream -- goes through the ``KubeClient``'s aiohttp session,
kubernetes_asyncio's ``ApiClient``'s, with its credentials (refreshed by the library's hook), proxy
and TLS settings. Bodies are encoded and answers read raw and decoded here with orjson (no
generated model is built), so no body is walked twice; a watch's events are decoded as its chunks
are read (``watch_into`` hands each to a callback inside the read: one task wake per chunk, not
per event); every failure is mapped by ``kube.errors``; every request first takes a token from a
client-side QPS/burst bucket; patches always state their content type.

Public API:

- ``WatchEvent(type, object)`` -- frozen; ``type`` is ADDED, MODIFIED, DELETED or BOOKMARK.
- ``RequestObserver = Callable[[str, str, int, float], None]`` -- ``(verb, resource, status,
  seconds)`` called after every request (status 0: no HTTP answer), e.g. for metrics.
- ``KubeApi(client: KubeClient, *, qps=20.0, burst=30, user_agent=None, field_manager=None,
  request_timeout=30.0, on_request=None)`` -- owns ``client`` (``close()`` closes it). A
  ``user_agent`` is set on the client itself.
  - ``async get(res, name, namespace=None, *, subresource=None) -> dict``
  - ``async list(res, namespace=None, *, label_selector=None, field_selector=None,
    resource_version=None, limit=None, continue_token=None, metadata_only=False) -> dict`` -- one
    page, as served (``metadata_only``: a PartialObjectMetadataList).
  - ``async list_all(res, namespace=None, *, label_selector=None, field_selector=None,
    page_size=500, transform=None, metadata_only=False, resource_version=None) -> tuple[list[dict],
    str]`` -- every page (``resource_version`` on the first only); items get ``apiVersion``/``kind``
    filled in (the server omits them in lists); returns the items and the list's resourceVersion.
  - ``async create(res, body, namespace=None, *, dry_run=False, metadata_only=False) -> dict`` -- the
    namespace defaults to ``body.metadata.namespace``.

  ``metadata_only`` asks the server for the objects' metadata alone (``as=PartialObjectMetadata``),
  which saves it encoding, and us decoding, what a caller keeping only metadata would drop; each
  object comes back under ``res``'s apiVersion and kind, without spec or status.
  - ``async replace(res, name, body, namespace=None, *, subresource=None) -> dict``
  - ``async patch(res, name, body, namespace=None, *, patch_type, subresource=None, dry_run=False,
    field_manager=None, force=False) -> dict`` -- ``JSON`` takes a list of operations, the others a
    dict; ``APPLY`` needs a field manager (argument or constructor default).
  - ``async delete(res, name, namespace=None, *, propagation_policy=None, grace_period_seconds=None,
    uid_precondition=None, resource_version_precondition=None) -> dict | None`` -- the object when
    the server returns it (e.g. deletion pending on finalizers), ``None`` for a plain ``Status``.
  - ``watch(res, namespace=None, *, resource_version, timeout_seconds, allow_bookmarks=True,
    label_selector=None, field_selector=None, metadata_only=False) -> AsyncGenerator[WatchEvent, None]``
    -- an async generator:
    close it (``contextlib.aclosing``) when leaving early. It ends when the server ends the stream;
    an ERROR event raises its ``ApiError`` (410 -> ``Gone``); a broken stream raises
    ``ConnectionFailed``, as does a line over ``MAX_WATCH_LINE``. Reading pauses while the consumer
    is behind, so a slow one holds a bounded part of the stream.
  - ``async watch_into(res, namespace=None, *, resource_version, timeout_seconds, on_event,
    allow_bookmarks=True, label_selector=None, field_selector=None, metadata_only=False)`` -- the
    same watch, each event
    handed to ``on_event(event)`` as it is read; returns when the server ends the stream, raises as
    ``watch`` does, and what ``on_event`` raises ends the watch and is raised here.
  - ``stream(res, name, namespace=None, *, subresource, query=(), idle_timeout=None) ->
    AsyncGenerator[bytes, None]`` -- the raw body of a streaming subresource such as ``pods/log``.
  - ``async close()``
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlencode

import aiohttp
import orjson

from kube.client import KubeClient
from kube.errors import (
    ApiError,
    ConnectionFailed,
    from_connection_error,
    from_status,
    from_status_object,
)
from kube.patches import PatchType
from kube.ratelimit import TokenBucket
from kube.resources import Resource

__all__ = ["MAX_WATCH_LINE", "KubeApi", "RequestObserver", "Transform", "WatchEvent"]

logger = logging.getLogger(__name__)

# Answers of the objects' metadata alone (kube-apiserver's PartialObjectMetadata, for one object or
# each event of a watch, and PartialObjectMetadataList); a server that cannot transform answers falls
# back to the objects, which hold the same metadata.
_METADATA_ONLY: Final = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"
_METADATA_LIST_ONLY: Final = (
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"
)
_PARTIAL: Final = "PartialObjectMetadata"


def _as_resource(res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    """A PartialObjectMetadata as ``res``'s object without spec or status (else ``obj`` as it is)."""
    if obj.get("kind") == _PARTIAL:
        return {"apiVersion": res.api_version, "kind": res.kind, "metadata": obj.get("metadata") or {}}
    return obj

RequestObserver = Callable[[str, str, int, float], None]
# Applied to each listed or watched object before a cache keeps it (client-go's SetTransform).
Transform = Callable[[dict[str, Any]], dict[str, Any]]

WATCH_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})
_TRANSPORT_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError, OSError)
Query = Sequence[tuple[str, str]]
# One watch event is one line holding one object: etcd keeps objects of up to 1.5 MiB, and JSON's
# escaping and the event's envelope can make that a few times longer. A longer line is a broken
# stream, not something to buffer.
MAX_WATCH_LINE: Final = 16 * 2**20
# The body of a watch refused with an error status: a Status object, a few hundred bytes.
_MAX_REFUSAL: Final = 2**20
# A unary request's time limit is asyncio's, around its credentials and its exchange both.
_NO_SESSION_TIMEOUT: Final = aiohttp.ClientTimeout()
# The largest answer read. A list page of 500 objects is a few MiB on kube-apiserver (pods with
# managedFields are 5-10 KiB each); etcd keeps objects of up to 1.5 MiB, so a page of 500 large
# ConfigMaps or Secrets could in principle be far bigger. 256 MiB holds 170 objects at etcd's limit
# per page, and decoding it is still seconds, not minutes; past it the answer is refused, not held.
MAX_BODY: Final = 256 * 2**20


async def _read_bounded(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body, refused (``ConnectionFailed``) once it is over ``limit`` bytes."""
    declared = response.content_length
    if declared is not None and declared > limit:
        raise ConnectionFailed(0, "AnswerTooLarge", f"the answer's body of {declared} bytes is over {limit}")
    if declared is not None:
        return await response.read()
    parts: builtins.list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise ConnectionFailed(0, "AnswerTooLarge", f"the answer's body is over {limit} bytes")
        parts.append(chunk)
    return b"".join(parts)


@dataclass(frozen=True)
class WatchEvent:
    type: str
    object: dict[str, Any]


def _bool(value: bool) -> str:
    return "true" if value else "false"


class KubeApi:
    def __init__(
        self,
        client: KubeClient,
        *,
        qps: float = 20.0,
        burst: int = 30,
        user_agent: str | None = None,
        field_manager: str | None = None,
        request_timeout: float = 30.0,
        on_request: RequestObserver | None = None,
    ) -> None:
        self._client = client
        self._limiter = TokenBucket(qps, burst)
        self._field_manager = field_manager
        self._request_timeout = request_timeout
        self._on_request = on_request
        if user_agent:
            client.user_agent = user_agent

    @property
    def client(self) -> KubeClient:
        return self._client

    async def close(self) -> None:
        await self._client.close()

    # -- transport ---------------------------------------------------------------------------

    def _observe(self, verb: str, res: Resource, status: int, started: float) -> None:
        if self._on_request is None:
            return
        try:
            self._on_request(verb, str(res), status, time.monotonic() - started)
        except Exception:
            logger.exception("request observer failed")

    async def _request(
        self,
        verb: str,
        method: str,
        res: Resource,
        path: str,
        *,
        query: Query = (),
        body: Any = None,
        content_type: str | None = None,
        accept: str = "application/json",
    ) -> dict[str, Any] | None:
        await self._limiter.acquire()
        started = time.monotonic()  # the observer sees server latency, not time spent throttled
        status = 0
        client = self._client
        url = f"{client.host}{path}?{urlencode(query)}" if query else f"{client.host}{path}"
        try:
            # Credentials renewed for this request (an exec plugin run) count in its time limit.
            async with asyncio.timeout(self._request_timeout):
                headers = await client.headers(accept, content_type)
                async with client.session.request(
                    method, url, data=None if body is None else orjson.dumps(body), headers=headers,
                    timeout=_NO_SESSION_TIMEOUT, **client.request_options,
                ) as response:
                    status = response.status
                    data = await _read_bounded(response, MAX_BODY)
        except _TRANSPORT_ERRORS as exc:
            raise from_connection_error(exc) from exc
        finally:
            self._observe(verb, res, status, started)
        if status == 401:
            client.rejected()
        if not 200 <= status < 300:
            raise from_status(status, data, reason=response.reason, headers=response.headers)
        if not data:
            return None
        try:
            decoded = orjson.loads(data)
        except ValueError as exc:
            raise ApiError(status, "BadResponse", f"{method} {path}: response is not JSON") from exc
        if not isinstance(decoded, dict):
            raise ApiError(status, "BadResponse", f"{method} {path}: response is not a JSON object")
        return decoded

    async def _request_object(
        self, verb: str, method: str, res: Resource, path: str, **kwargs: Any
    ) -> dict[str, Any]:
        result = await self._request(verb, method, res, path, **kwargs)
        if result is None:
            raise ApiError(0, "BadResponse", f"{method} {path}: empty response")
        return result

    async def _open_stream(
        self,
        verb: str,
        res: Resource,
        path: str,
        query: Query,
        idle_timeout: float | None,
        accept: str = "application/json",
    ) -> aiohttp.ClientResponse:
        """A GET whose body the caller reads as it arrives (and closes); an error status raises.

        The head must come within the request timeout; then each read within ``idle_timeout``
        (None: for ever)."""
        await self._limiter.acquire()
        started = time.monotonic()
        status = 0
        client = self._client
        url = f"{client.host}{path}?{urlencode(query)}" if query else f"{client.host}{path}"
        timeout = aiohttp.ClientTimeout(sock_connect=self._request_timeout, sock_read=idle_timeout)
        try:
            async with asyncio.timeout(self._request_timeout):
                headers = await client.headers(accept)
                response = await client.session.get(
                    url, headers=headers, timeout=timeout, **client.request_options
                )
            status = response.status
        except _TRANSPORT_ERRORS as exc:
            raise from_connection_error(exc) from exc
        finally:
            self._observe(verb, res, status, started)
        if 200 <= status < 300:
            return response
        if status == 401:
            client.rejected()
        try:
            data = await _read_bounded(response, _MAX_REFUSAL)
        except (*_TRANSPORT_ERRORS, ApiError):
            data = b""  # the status says what matters; a body cut short only loses its details
        finally:
            response.close()
        raise from_status(status, data, reason=response.reason, headers=response.headers)

    # -- CRUD --------------------------------------------------------------------------------

    async def get(
        self, res: Resource, name: str, namespace: str | None = None, *, subresource: str | None = None
    ) -> dict[str, Any]:
        return await self._request_object("get", "GET", res, res.path(namespace, name, subresource))

    async def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        query: builtins.list[tuple[str, str]] = []
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        if resource_version is not None:
            query.append(("resourceVersion", resource_version))
        if limit is not None:
            query.append(("limit", str(limit)))
        if continue_token:
            query.append(("continue", continue_token))
        return await self._request_object(
            "list", "GET", res, res.path(namespace), query=query,
            accept=_METADATA_LIST_ONLY if metadata_only else "application/json",
        )

    async def list_all(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        transform: Transform | None = None,
        metadata_only: bool = False,
        resource_version: str | None = None,
    ) -> tuple[builtins.list[dict[str, Any]], str]:
        """Every page of a list, and the list's resourceVersion. ``transform`` is applied to each
        item as its page arrives, so a caller keeping a trimmed view never holds more than one
        page of full objects. ``resource_version`` goes with the first page only (a continue
        token carries its own, and the server refuses both)."""
        items: builtins.list[dict[str, Any]] = []
        continue_token: str | None = None
        while True:
            page = await self.list(
                res, namespace, label_selector=label_selector, field_selector=field_selector,
                limit=page_size, continue_token=continue_token, metadata_only=metadata_only,
                resource_version=resource_version if continue_token is None else None,
            )
            for item in page.get("items") or ():
                if isinstance(item, dict):
                    if metadata_only:
                        item = _as_resource(res, item)
                    item.setdefault("apiVersion", res.api_version)
                    item.setdefault("kind", res.kind)
                    items.append(transform(item) if transform is not None else item)
            metadata = page.get("metadata") or {}
            continue_token = metadata.get("continue") or None
            if continue_token is None:
                return items, str(metadata.get("resourceVersion") or "")

    async def create(
        self,
        res: Resource,
        body: dict[str, Any],
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        subresource_of: str | None = None,
        subresource: str | None = None,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """POST ``body``; with ``subresource_of``/``subresource`` it goes to a create-only
        subresource of that object instead (``pods/<name>/binding``, ``pods/<name>/eviction``)."""
        if namespace is None and res.namespaced:
            namespace = (body.get("metadata") or {}).get("namespace")
            if not namespace:
                raise ValueError(f"creating {res} needs a namespace (argument or metadata.namespace)")
        if (subresource_of is None) != (subresource is None):
            raise ValueError("subresource_of and subresource go together")
        query = [("dryRun", "All")] if dry_run else []
        created = await self._request_object(
            "create", "POST", res, res.path(namespace, subresource_of, subresource), query=query,
            body=body, content_type="application/json",
            accept=_METADATA_ONLY if metadata_only else "application/json",
        )
        return _as_resource(res, created) if metadata_only else created

    async def replace(
        self,
        res: Resource,
        name: str,
        body: dict[str, Any],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        return await self._request_object(
            "replace", "PUT", res, res.path(namespace, name, subresource), body=body,
            content_type="application/json",
        )

    async def patch(
        self,
        res: Resource,
        name: str,
        body: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType,
        subresource: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool = False,
    ) -> dict[str, Any]:
        if not isinstance(patch_type, PatchType):
            raise TypeError(f"patch_type must be a PatchType, got {patch_type!r}")
        if patch_type is PatchType.JSON and not isinstance(body, list):
            raise TypeError("a JSON patch body is a list of operations")
        if patch_type is not PatchType.JSON and not isinstance(body, dict):
            raise TypeError(f"a {patch_type.name} patch body is a dict")
        query: builtins.list[tuple[str, str]] = []
        manager = field_manager or self._field_manager
        if patch_type is PatchType.APPLY:
            if not manager:
                raise ValueError("a server-side apply needs a field manager")
            if force:
                query.append(("force", _bool(True)))
        if manager:
            query.append(("fieldManager", manager))
        if dry_run:
            query.append(("dryRun", "All"))
        return await self._request_object(
            "patch", "PATCH", res, res.path(namespace, name, subresource), query=query, body=body,
            content_type=patch_type.value,
        )

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        uid_precondition: str | None = None,
        resource_version_precondition: str | None = None,
    ) -> dict[str, Any] | None:
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation_policy is not None:
            if propagation_policy not in ("Foreground", "Background", "Orphan"):
                raise ValueError(f"unknown propagation policy {propagation_policy!r}")
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        preconditions: dict[str, str] = {}
        if uid_precondition is not None:
            preconditions["uid"] = uid_precondition
        if resource_version_precondition is not None:
            preconditions["resourceVersion"] = resource_version_precondition
        if preconditions:
            options["preconditions"] = preconditions
        result = await self._request(
            "delete", "DELETE", res, res.path(namespace, name), body=options, content_type="application/json"
        )
        if result is None or result.get("kind") == "Status":
            return None
        return result

    # -- watch -------------------------------------------------------------------------------

    async def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        timeout_seconds: int,
        allow_bookmarks: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> AsyncGenerator[WatchEvent, None]:
        query = _watch_query(
            resource_version, timeout_seconds, allow_bookmarks, label_selector, field_selector
        )
        response = await self._open_watch(res, namespace, query, timeout_seconds, metadata_only)
        events: builtins.list[WatchEvent] = []
        lines = _WatchLines(_metadata_events(res, events.append) if metadata_only else events.append)
        # aiohttp pauses reading once twice its read buffer waits unread: a consumer that falls
        # behind holds a bounded part of the stream.
        content = response.content
        try:
            while True:
                try:
                    chunk = await content.readany()
                    if chunk:
                        lines.feed(chunk)
                    else:
                        lines.finish()
                except (*_TRANSPORT_ERRORS, ApiError) as exc:
                    for event in events:  # what came before the failure, in order
                        yield event
                    events.clear()
                    if isinstance(exc, ApiError):
                        raise
                    raise from_connection_error(exc) from exc
                for event in events:
                    yield event
                events.clear()
                if not chunk:
                    return
        finally:
            response.close()

    async def watch_into(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        timeout_seconds: int,
        on_event: Callable[[WatchEvent], None],
        allow_bookmarks: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> None:
        query = _watch_query(
            resource_version, timeout_seconds, allow_bookmarks, label_selector, field_selector
        )
        response = await self._open_watch(res, namespace, query, timeout_seconds, metadata_only)
        lines = _WatchLines(_metadata_events(res, on_event) if metadata_only else on_event)
        try:
            async for chunk in response.content.iter_any():
                lines.feed(chunk)
            lines.finish()
        except _TRANSPORT_ERRORS as exc:
            raise from_connection_error(exc) from exc
        finally:
            response.close()

    async def _open_watch(
        self, res: Resource, namespace: str | None, query: Query, timeout_seconds: int, metadata_only: bool
    ) -> aiohttp.ClientResponse:
        # A half-open connection would otherwise wait for ever: the server must end the stream by
        # timeoutSeconds, so one silent well past that is a dead connection.
        return await self._open_stream(
            "watch", res, res.path(namespace), query, timeout_seconds + 30.0,
            accept=_METADATA_ONLY if metadata_only else "application/json",
        )

    async def stream(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        subresource: str,
        query: Query = (),
        idle_timeout: float | None = None,
    ) -> AsyncGenerator[bytes, None]:
        """The raw body of a streaming subresource (``pods/log``), chunk by chunk as it arrives.

        ``idle_timeout`` bounds the wait for each chunk (None: a followed log may stay quiet for
        ever); an error status raises its ``ApiError``. Close the generator when leaving early.
        """
        path = res.path(namespace, name, subresource)
        response = await self._open_stream("get", res, path, query, idle_timeout, accept="*/*")
        try:
            while True:
                try:
                    chunk = await response.content.readany()
                except _TRANSPORT_ERRORS as exc:
                    raise from_connection_error(exc) from exc
                if not chunk:
                    return
                yield chunk
        finally:
            response.close()


def _watch_query(
    resource_version: str,
    timeout_seconds: int,
    allow_bookmarks: bool,
    label_selector: str | None,
    field_selector: str | None,
) -> builtins.list[tuple[str, str]]:
    if timeout_seconds <= 0:
        raise ValueError("a watch needs a positive server-side timeout")
    query = [
        ("watch", _bool(True)),
        ("resourceVersion", resource_version),
        ("timeoutSeconds", str(timeout_seconds)),
        ("allowWatchBookmarks", _bool(allow_bookmarks)),
    ]
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    return query


def _metadata_events(res: Resource, on_event: Callable[[WatchEvent], None]) -> Callable[[WatchEvent], None]:
    """``on_event`` for a watch of metadata alone: each event's object as ``res``'s."""

    def hand_on(event: WatchEvent) -> None:
        on_event(WatchEvent(event.type, _as_resource(res, event.object)))

    return hand_on


class _WatchLines:
    """A watch's body, split into its lines as the chunks arrive; each line's event handed on.

    kube-apiserver writes each event as one chunk ending in a newline: that case is decoded as it
    came, without copying; a line split across chunks is joined once its end arrives."""

    def __init__(self, on_event: Callable[[WatchEvent], None]) -> None:
        self._on_event = on_event
        self._parts: builtins.list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> None:
        end = chunk.find(b"\n")
        if end < 0:
            self._keep(chunk)
            return
        on_event = self._on_event
        if self._parts:
            line = b"".join((*self._parts, chunk[:end]))
            self._parts.clear()
            self._size = 0
        elif end == len(chunk) - 1:
            line = chunk
        else:
            line = chunk[:end]
        while True:
            event = _parse_watch_line(line) if line.strip() else None
            if event is not None:
                on_event(event)
            start = end + 1
            if start >= len(chunk):
                return
            end = chunk.find(b"\n", start)
            if end < 0:
                self._keep(chunk[start:])
                return
            line = chunk[start:end]

    def finish(self) -> None:
        """The stream ended: a last line without its newline still counts."""
        if self._parts:
            line = b"".join(self._parts)
            self._parts.clear()
            self._size = 0
            event = _parse_watch_line(line) if line.strip() else None
            if event is not None:
                self._on_event(event)

    def _keep(self, part: bytes) -> None:
        self._size += len(part)
        if self._size > MAX_WATCH_LINE:
            raise ConnectionFailed(0, "BadWatchStream", f"a watch line is over {MAX_WATCH_LINE} bytes")
        self._parts.append(part)


def _parse_watch_line(line: bytes) -> WatchEvent | None:
    try:
        decoded = orjson.loads(line)
    except ValueError as exc:
        raise ConnectionFailed(0, "BadWatchStream", f"undecodable watch line: {line[:200]!r}") from exc
    if not isinstance(decoded, dict):
        raise ConnectionFailed(0, "BadWatchStream", f"watch line is not an object: {line[:200]!r}")
    event_type = decoded.get("type")
    obj = decoded.get("object")
    if event_type == "ERROR" or (event_type is None and "code" in decoded):
        raise from_status_object(obj if isinstance(obj, dict) else decoded)
    if event_type not in WATCH_EVENT_TYPES or not isinstance(obj, dict):
        logger.warning("ignoring unexpected watch event %r", line[:200])
        return None
    return WatchEvent(event_type, obj)
