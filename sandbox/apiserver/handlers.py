"""The REST surface: URL parsing, content negotiation and the verbs, mapped onto operations."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import aiohttp
import yaml
from aiohttp import web

from realcluster.requestrecord import RequestRecord
from sandbox.apiserver import discovery, errors, operations, protobuf, rbac, representation, selectors, tables
from sandbox.apiserver.auth import UserInfo
from sandbox.apiserver.eviction import evict_pod
from sandbox.apiserver.gc import Deleter, parse_delete_options
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.operations import RequestContext
from sandbox.apiserver.podsubresources import bind_pod, pod_log
from sandbox.apiserver.registry import ResourceInfo
from sandbox.apiserver.requestlog import kubernetes_verb
from sandbox.apiserver.state import ApiState
from sandbox.apiserver.watching import DEFAULT_WATCH_TIMEOUT, WatchRequest, WatchStream

logger = logging.getLogger(__name__)


USER_KEY = web.RequestKey("sandbox-user", UserInfo)
# Set once a long-running call (a watch) is in the request log, so it appears while it runs.
LOGGED_KEY = web.RequestKey("sandbox-logged", bool)
# The answer's form once negotiated, for the request log.
WANTED_KEY = web.RequestKey("sandbox-wanted", representation.Wanted)
ANONYMOUS = UserInfo("system:anonymous", ("system:unauthenticated",))
JSON_CONTENT_TYPES = ("application/json", "*/*", "")


@dataclass(frozen=True)
class ResourcePath:
    group: str
    version: str
    namespace: str | None
    resource: str
    name: str
    subresource: str
    legacy_watch: bool


def parse_path(path: str) -> ResourcePath | None:
    """``/api/v1/...`` or ``/apis/<group>/<version>/...`` into its parts (None for discovery paths)."""
    segments = [s for s in path.split("/") if s]
    if not segments:
        return None
    if segments[0] == "api":
        if len(segments) < 3:
            return None
        group, version, rest = "", segments[1], segments[2:]
    elif segments[0] == "apis":
        if len(segments) < 4:
            return None
        group, version, rest = segments[1], segments[2], segments[3:]
    else:
        return None
    legacy_watch = False
    if rest and rest[0] == "watch":
        legacy_watch, rest = True, rest[1:]
    namespace: str | None = None
    if rest and rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    return ResourcePath(group, version, namespace, resource, name, subresource, legacy_watch)


def log_request(state: ApiState, request: web.Request, code: int) -> None:
    """Add the request log's record of one API call (not discovery, health or OpenAPI)."""
    path = parse_path(request.path)
    if path is None:
        return
    watch = path.legacy_watch or request.query.get("watch", "").lower() in ("true", "1")
    user = request.get(USER_KEY)
    negotiated = request.get(WANTED_KEY)
    state.request_log.add(
        RequestRecord(
            verb=kubernetes_verb(request.method, bool(path.name), watch),
            group=path.group,
            version=path.version,
            resource=path.resource,
            subresource=path.subresource,
            namespace=path.namespace or "",
            name=path.name,
            user=user.username if user else "",
            code=code,
            form=negotiated.form.value if negotiated is not None else "",
        )
    )


def json_response(
    body: Any, status: int = 200, warnings: list[str] | None = None, content_type: str = "application/json"
) -> web.Response:
    response = web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(),
        status=status,
        content_type=content_type.split(";")[0],
    )
    if ";" in content_type:
        response.headers["Content-Type"] = content_type
    for warning in warnings or []:
        response.headers.add("Warning", f'299 - "{warning}"')
    return response


def error_response(error: errors.ApiError, warnings: list[str] | None = None) -> web.Response:
    response = json_response(error.body(), error.code, warnings)
    for key, value in error.headers.items():
        response.headers[key] = value
    return response


def wanted(request: web.Request) -> representation.Wanted:
    negotiated = representation.negotiate(request.headers.get("Accept", ""))
    request[WANTED_KEY] = negotiated
    return negotiated


def _bool_query(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1", "yes")


class RestHandler:
    def __init__(self, state: ApiState, deleter: Deleter) -> None:
        self.state = state
        self.deleter = deleter

    # --- discovery -------------------------------------------------------------------------------
    def discovery(self, request: web.Request) -> web.Response | None:
        segments = [s for s in request.path.split("/") if s]
        registry = self.state.registry
        aggregated = "as=apigroupdiscoverylist" in request.headers.get("Accept", "").replace(" ", "").lower()
        aggregated_type = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        if segments == ["api"]:
            if aggregated:
                return json_response(
                    discovery.aggregated_discovery(registry, legacy=True), content_type=aggregated_type
                )
            return json_response(discovery.api_versions(request.host))
        if segments == ["apis"]:
            if aggregated:
                return json_response(
                    discovery.aggregated_discovery(registry, legacy=False), content_type=aggregated_type
                )
            return json_response(discovery.api_group_list(registry))
        if segments == ["api", "v1"]:
            return json_response(discovery.api_resource_list(registry, "", "v1"))
        if len(segments) == 2 and segments[0] == "apis":
            group = discovery.api_group(registry, segments[1])
            if group is None:
                raise errors.page_not_found()
            return json_response(group)
        if len(segments) == 3 and segments[0] == "apis":
            resources = discovery.api_resource_list(registry, segments[1], segments[2])
            if resources is None:
                raise errors.page_not_found()
            return json_response(resources)
        return None

    # --- dispatch --------------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        found = self.discovery(request)
        if found is not None:
            if request.method != "GET":
                raise errors.method_not_allowed()
            return found
        path = parse_path(request.path)
        if path is None:
            raise errors.page_not_found()
        info = self.state.registry.lookup(path.group, path.version, path.resource)
        if info is None:
            raise errors.page_not_found()
        if info.namespaced and path.namespace is None and path.name:
            raise errors.page_not_found()
        if not info.namespaced and path.namespace is not None:
            raise errors.page_not_found()
        if info.namespaced and path.namespace is None and request.method not in ("GET", "DELETE"):
            raise errors.method_not_allowed()
        if path.subresource and path.subresource not in info.subresources:
            raise errors.page_not_found()
        namespace = path.namespace or ""
        ctx = self._context(request)
        method = request.method
        self._authorize(request, info, path)
        # Negotiated before anything is written: a form the server does not know refuses the request.
        form = wanted(request)
        if path.subresource == "log":
            if method != "GET":
                raise errors.method_not_allowed()
            return await pod_log(self.state, request, namespace, path.name)
        if path.subresource == "eviction":
            if method != "POST":
                raise errors.method_not_allowed()
            body = await self._json_body(request)
            evicted = await evict_pod(self.state, self.deleter, info, namespace, path.name, body, ctx)
            return json_response(evicted, 201)
        if path.subresource == "binding":
            if method != "POST":
                raise errors.method_not_allowed()
            bound = bind_pod(self.state, namespace, path.name, await self._json_body(request), ctx.dry_run)
            return json_response(bound, 201)
        if method == "GET":
            watch = path.legacy_watch or _bool_query(request.query.get("watch"))
            if watch:
                return await self._watch(request, form, info, path)
            if path.name:
                return self._respond_object(
                    request, form, info, operations.get(self.state, info, namespace, path.name)
                )
            return self._list(request, form, info, path.namespace)
        if method == "POST":
            if path.name:
                raise errors.method_not_allowed()
            body = await self._json_body(request)
            created = await operations.create(self.state, info, namespace, body, ctx)
            return self._respond_written(form, info, created, 201, ctx.warnings)
        if method == "PUT":
            if not path.name:
                raise errors.method_not_allowed()
            body = await self._json_body(request)
            updated, was_created = await operations.update(
                self.state, info, namespace, path.name, path.subresource, body, ctx
            )
            return self._respond_written(form, info, updated, 201 if was_created else 200, ctx.warnings)
        if method == "PATCH":
            if not path.name:
                raise errors.method_not_allowed()
            raw = await request.read()
            patched, was_created = await operations.patch(
                self.state,
                info,
                namespace,
                path.name,
                path.subresource,
                request.headers.get("Content-Type", ""),
                raw,
                ctx,
            )
            return self._respond_written(form, info, patched, 201 if was_created else 200, ctx.warnings)
        if method == "DELETE":
            if path.subresource:
                raise errors.method_not_allowed()
            body = await self._optional_json_body(request)
            options = parse_delete_options(body, dict(request.query))
            if path.name:
                deleted = await self.deleter.delete(info, namespace, path.name, options, ctx)
                return self._respond_written(form, info, deleted, 200, ctx.warnings)
            return await self._delete_collection(request, info, path.namespace, options, ctx)
        raise errors.method_not_allowed()

    def _authorize(self, request: web.Request, info: ResourceInfo, path: ResourcePath) -> None:
        authorizer = self.state.authorizer
        if authorizer is None:
            return
        watch = path.legacy_watch or _bool_query(request.query.get("watch"))
        authorizer.check(
            rbac.Attributes(
                user=request.get(USER_KEY, ANONYMOUS),
                verb=kubernetes_verb(request.method, bool(path.name), watch),
                group=info.group,
                resource=info.resource,
                subresource=path.subresource,
                namespace=path.namespace or "",
                name=path.name,
            )
        )

    def _context(self, request: web.Request) -> RequestContext:
        dry_run = request.query.getall("dryRun", [])
        for value in dry_run:
            if value != "All":
                raise errors.bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
        validation = request.query.get("fieldValidation", "Warn") or "Warn"
        if validation not in ("Ignore", "Warn", "Strict"):
            raise errors.bad_request(f"fieldValidation parameter unsupported: {validation}")
        return RequestContext(
            request.get(USER_KEY, ANONYMOUS), bool(dry_run), validation, request.query.get("fieldManager", "")
        )

    async def _json_body(self, request: web.Request) -> Any:
        content_type = request.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()
        if content_type == protobuf.PROTOBUF:
            return protobuf.decode_body(await request.read())
        if content_type not in ("application/json", "application/yaml", ""):
            # kube-apiserver also takes CBOR; the sandbox speaks JSON, YAML and the protobuf of a few kinds.
            raise errors.unsupported_media_type(["application/json", "application/yaml"])
        raw = await request.read()
        try:
            if content_type == "application/yaml":
                return yaml.safe_load(raw.decode())
            return json.loads(raw or b"null")
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(f"couldn't get version/kind; json parse error: {exc}") from exc

    async def _optional_json_body(self, request: web.Request) -> Any:
        raw = await request.read()
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise errors.bad_request(f"couldn't get version/kind; json parse error: {exc}") from exc

    # --- reads -----------------------------------------------------------------------------------
    def _respond_object(
        self, request: web.Request, form: representation.Wanted, info: ResourceInfo, obj: JsonObj
    ) -> web.Response:
        representation.not_acceptable_for_object(form, info.kind)
        if form.form is representation.Form.METADATA:
            return json_response(representation.partial_metadata(obj, form.version))
        if form.table:
            meta = {"resourceVersion": str((obj.get("metadata") or {}).get("resourceVersion", ""))}
            return json_response(
                tables.build_table(
                    info, [obj], meta, request.query.get("includeObject", "Metadata"), self.state.now()
                )
            )
        return json_response(obj)

    def _respond_written(
        self, form: representation.Wanted, info: ResourceInfo, obj: JsonObj, status: int, warnings: list[str]
    ) -> web.Response:
        """A write's answer, its metadata only when asked for (a Status, as some deletes answer, as it is).

        As kube-apiserver, a list form asked of a write is refused once the write is done."""
        representation.not_acceptable_for_object(form, info.kind)
        if form.form is representation.Form.METADATA and obj.get("kind") != "Status":
            obj = representation.partial_metadata(obj, form.version)
        return json_response(obj, status, warnings)

    def _filter(self, request: web.Request, info: ResourceInfo, name: str = "") -> Any:
        field_selector = request.query.get("fieldSelector", "")
        if name:
            field_selector = f"metadata.name={name}" + (f",{field_selector}" if field_selector else "")
        extra = info.custom.selectable_fields if info.custom else ()
        return selectors.build_filter(
            request.query.get("labelSelector", ""),
            field_selector,
            info.storage_key.resource,
            info.kind,
            tuple(f.lstrip(".") for f in extra),
        )

    def _list(
        self, request: web.Request, form: representation.Wanted, info: ResourceInfo, namespace: str | None
    ) -> web.Response:
        representation.not_acceptable_for_list(form, info.list_kind)
        try:
            limit = int(request.query.get("limit", "0") or 0)
        except ValueError as exc:
            raise errors.bad_request(f"invalid limit: {request.query.get('limit')}") from exc
        result = operations.list_objects(
            self.state, info, namespace, self._filter(request, info), limit, request.query.get("continue", "")
        )
        list_meta: JsonObj = {"resourceVersion": result.resource_version}
        if result.continue_token:
            list_meta["continue"] = result.continue_token
            if result.remaining is not None:
                list_meta["remainingItemCount"] = result.remaining
        if form.form is representation.Form.METADATA_LIST:
            return json_response(
                representation.partial_metadata_list(result.served(info), list_meta, form.version)
            )
        if form.table:
            return json_response(
                tables.build_table(
                    info,
                    result.served(info),
                    list_meta,
                    request.query.get("includeObject", "Metadata"),
                    self.state.now(),
                )
            )
        if info.storage is None and all(o.get("apiVersion") == info.api_version for o in result.stored):
            # Stored objects never change, so each one's encoding is made once and reused by every list.
            head = json.dumps(
                {"kind": info.list_kind, "apiVersion": info.api_version, "metadata": list_meta},
                separators=(",", ":"),
            ).encode()
            items = b",".join(self.state.storage.encoded(obj) for obj in result.stored)
            return web.Response(
                body=head[:-1] + b',"items":[' + items + b"]}", content_type="application/json"
            )
        return json_response(
            {
                "kind": info.list_kind,
                "apiVersion": info.api_version,
                "metadata": list_meta,
                "items": result.served(info),
            }
        )

    async def _watch(
        self, request: web.Request, form: representation.Wanted, info: ResourceInfo, path: ResourcePath
    ) -> web.StreamResponse:
        try:
            timeout = float(
                request.query.get("timeoutSeconds", DEFAULT_WATCH_TIMEOUT) or DEFAULT_WATCH_TIMEOUT
            )
        except ValueError as exc:
            raise errors.bad_request("invalid timeoutSeconds") from exc
        representation.not_acceptable_for_object(form, info.kind)
        watch_request = WatchRequest(
            info=info,
            namespace=path.namespace,
            matches=self._filter(request, info, path.name),
            resource_version=request.query.get("resourceVersion", ""),
            timeout=timeout,
            bookmarks=_bool_query(request.query.get("allowWatchBookmarks")),
            send_initial_events=_bool_query(request.query.get("sendInitialEvents")),
            form=form,
            include_object=request.query.get("includeObject", "Metadata"),
        )
        response = web.StreamResponse(status=200)
        response.content_type = "application/json"
        response.enable_chunked_encoding()
        await response.prepare(request)
        log_request(self.state, request, response.status)
        request[LOGGED_KEY] = True
        stream = WatchStream(self.state, watch_request, response.write)
        try:
            await stream.run()
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            logger.debug("watch client went away")
        return response

    # --- writes ----------------------------------------------------------------------------------
    async def _delete_collection(
        self,
        request: web.Request,
        info: ResourceInfo,
        namespace: str | None,
        options: Any,
        ctx: RequestContext,
    ) -> web.Response:
        matches = self._filter(request, info)
        deleted = []
        for obj in self.state.storage.list_in(info.storage_key, namespace):
            if matches is not None and not matches(obj):
                continue
            meta = obj["metadata"]
            try:
                deleted.append(
                    await self.deleter.delete(
                        info, str(meta.get("namespace") or ""), str(meta["name"]), options, ctx
                    )
                )
            except errors.ApiError as error:
                if error.code != 404:
                    raise
        return json_response(
            {
                "kind": info.list_kind,
                "apiVersion": info.api_version,
                "metadata": {"resourceVersion": str(self.state.storage.revision)},
                "items": deleted,
            },
            200,
            ctx.warnings,
        )
