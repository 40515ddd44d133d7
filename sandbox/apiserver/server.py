"""The aiohttp application and the server's life cycle (HTTPS on 127.0.0.1)."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import yaml
from aiohttp import web

from sandbox.apiserver import openapi, operations
from sandbox.apiserver.auth import ADMIN_GROUPS, ADMIN_USER, UserInfo
from sandbox.apiserver.discovery import version_info
from sandbox.apiserver.gc import Deleter
from sandbox.apiserver.handlers import (
    LOGGED_KEY,
    USER_KEY,
    RestHandler,
    error_response,
    json_response,
    log_request,
)
from sandbox.apiserver.rbac import Authorizer
from sandbox.apiserver.registry import StorageKey
from sandbox.apiserver.state import ApiState
from sandbox.apiserver.status import ApiError, internal_error, unauthorized
from sandbox.apiserver.storage import DEFAULT_WATCH_WINDOW
from sandbox.apiserver.tls import ServingMaterial, new_serving_material, server_ssl_context

logger = logging.getLogger(__name__)

JsonObj = dict[str, Any]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

BOOT_USER = UserInfo("system:apiserver", ("system:masters",))
PUBLIC_PATHS = ("/version", "/healthz", "/readyz", "/livez", "/openapi/")
BOOTSTRAP_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
SYSTEM_PRIORITY_CLASSES = (
    (
        "system-node-critical",
        2000001000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2000000000,
        "Used for system critical pods that must run in the cluster, but can be "
        "moved to another node if necessary.",
    ),
)


def build_app(state: ApiState, deleter: Deleter) -> web.Application:
    rest = RestHandler(state, deleter)

    @web.middleware
    async def api_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        code = 500
        try:
            user = state.authenticator.authenticate(request.headers.get("Authorization"))
            if user is None and not request.path.startswith(PUBLIC_PATHS):
                raise unauthorized()
            if user is not None:
                request[USER_KEY] = user
            response = await handler(request)
            code = response.status
            return response
        except ApiError as error:
            code = error.code
            return error_response(error)
        except web.HTTPException:
            raise
        except Exception as exc:
            logger.exception("unhandled error serving %s %s", request.method, request.path)
            code = 500
            return error_response(internal_error(str(exc)))
        finally:
            if not request.get(LOGGED_KEY):
                log_request(state, request, code)

    async def version(_request: web.Request) -> web.StreamResponse:
        return json_response(version_info())

    async def health(_request: web.Request) -> web.StreamResponse:
        return web.Response(text="ok")

    async def request_log(request: web.Request) -> web.StreamResponse:
        if request.method == "DELETE":
            state.request_log.clear()
            return json_response({})
        return json_response([record.wire() for record in state.request_log.records()])

    async def api(request: web.Request) -> web.StreamResponse:
        return await rest.handle(request)

    app = web.Application(middlewares=[api_middleware], client_max_size=64 * 1024 * 1024)
    app.router.add_get("/version", version)
    for probe in ("/healthz", "/readyz", "/livez"):
        app.router.add_get(probe, health)
    app.router.add_route("*", "/sandbox/requests", request_log)
    openapi.add_routes(app, state)
    app.router.add_route("*", "/api", api)
    app.router.add_route("*", "/api/{tail:.*}", api)
    app.router.add_route("*", "/apis", api)
    app.router.add_route("*", "/apis/{tail:.*}", api)
    return app


def load_documents(path: str) -> list[JsonObj]:
    with open(path, encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if isinstance(doc, dict)]


class ApiServer:
    """One sandbox API server: state, HTTPS listener, garbage collector."""

    def __init__(
        self,
        watch_window: int = DEFAULT_WATCH_WINDOW,
        material: ServingMaterial | None = None,
        authorize: bool = False,
    ) -> None:
        self.state = ApiState.create(watch_window)
        if authorize:
            self.state.authorizer = Authorizer(self.state.storage)
        self.deleter = Deleter(self.state)
        self.deleter.install()
        self.material = material or new_serving_material()
        self.admin_token = self.state.authenticator.add(ADMIN_USER, ADMIN_GROUPS)
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        await self.bootstrap()
        app = build_app(self.state, self.deleter)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, ssl_context=server_ssl_context(self.material))
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = int(sockets[0].getsockname()[1]) if sockets else port
        logger.info("sandbox API server listening on %s", self.url)
        return self.url

    async def stop(self) -> None:
        self.state.storage.close_all_watches()
        await self.state.admission.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def bootstrap(self) -> None:
        ctx = operations.RequestContext(BOOT_USER)
        namespaces = self.state.registry.lookup("", "v1", "namespaces")
        priority_classes = self.state.registry.lookup("scheduling.k8s.io", "v1", "priorityclasses")
        assert namespaces is not None and priority_classes is not None
        for name in BOOTSTRAP_NAMESPACES:
            if self.state.storage.get(StorageKey("", "namespaces"), "", name) is None:
                await operations.create(self.state, namespaces, "", {"metadata": {"name": name}}, ctx)
        for name, value, description in SYSTEM_PRIORITY_CLASSES:
            if self.state.storage.get(StorageKey("scheduling.k8s.io", "priorityclasses"), "", name) is None:
                await operations.create(
                    self.state,
                    priority_classes,
                    "",
                    {"metadata": {"name": name}, "value": value, "description": description},
                    ctx,
                )

    async def apply_object(self, obj: JsonObj) -> JsonObj:
        """Create or replace one object as the server itself (used to install CRDs)."""
        api_version = str(obj.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        kind = obj.get("kind")
        info = next(
            (
                i
                for i in self.state.registry.all()
                if i.group == group and i.version == version and i.kind == kind
            ),
            None,
        )
        if info is None:
            raise ValueError(f"the sandbox does not serve {api_version} {kind}")
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or ("default" if info.namespaced else ""))
        ctx = operations.RequestContext(BOOT_USER)
        existing = self.state.storage.get(info.storage_key, namespace, str(meta.get("name", "")))
        if existing is None:
            return await operations.create(self.state, info, namespace, obj, ctx)
        replacement = json.loads(json.dumps(obj))
        replacement.setdefault("metadata", {})["resourceVersion"] = existing["metadata"]["resourceVersion"]
        updated, _ = await operations.update(
            self.state, info, namespace, str(meta["name"]), "", replacement, ctx
        )
        return updated

    async def install_file(self, path: str) -> list[JsonObj]:
        return [await self.apply_object(doc) for doc in load_documents(path)]
