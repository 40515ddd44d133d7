"""The aiohttp application and the server's life cycle (HTTPS on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable

import yaml
from aiohttp import web

from sandbox.apiserver import errors, handlers, openapi, operations
from sandbox.apiserver.auth import ADMIN_GROUPS, ADMIN_USER, UserInfo
from sandbox.apiserver.discovery import version_info
from sandbox.apiserver.faults import FaultControl, Faults, apply_request
from sandbox.apiserver.gc import Deleter
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.rbac import Authorizer
from sandbox.apiserver.registry import NAMESPACES, PRIORITY_CLASSES
from sandbox.apiserver.state import ApiState
from sandbox.apiserver.storage import DEFAULT_WATCH_WINDOW
from sandbox.apiserver.tls import ServingMaterial, new_serving_material, server_ssl_context

logger = logging.getLogger(__name__)

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


def build_app(
    state: ApiState, deleter: Deleter, faults: Faults | None = None, control: FaultControl | None = None
) -> web.Application:
    rest = handlers.RestHandler(state, deleter)
    faults = faults or Faults()

    @web.middleware
    async def api_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        code = 500
        try:
            user = state.authenticator.authenticate(request.headers.get("Authorization"))
            if user is None and not request.path.startswith(PUBLIC_PATHS):
                raise errors.unauthorized()
            if user is not None:
                request[handlers.USER_KEY] = user
            delay, injected = faults.gate(request.path)
            if delay:
                await asyncio.sleep(delay)
            if injected is not None:
                raise injected
            response = await handler(request)
            code = response.status
            return response
        except errors.ApiError as error:
            code = error.code
            return handlers.error_response(error)
        except web.HTTPException:
            raise
        except Exception as exc:
            logger.exception("unhandled error serving %s %s", request.method, request.path)
            code = 500
            return handlers.error_response(errors.internal_error(str(exc)))
        finally:
            if not request.get(handlers.LOGGED_KEY):
                handlers.log_request(state, request, code)

    async def version(_request: web.Request) -> web.StreamResponse:
        return handlers.json_response(version_info())

    async def health(_request: web.Request) -> web.StreamResponse:
        return web.Response(text="ok")

    async def request_log(request: web.Request) -> web.StreamResponse:
        if request.method == "DELETE":
            state.request_log.clear()
            return handlers.json_response({})
        return handlers.json_response([record.wire() for record in state.request_log.records()])

    async def fault_endpoint(request: web.Request) -> web.StreamResponse:
        if request.method not in ("GET", "POST", "DELETE"):
            raise errors.bad_request(
                f"{request.method} is not served on {request.path}; use GET, POST or DELETE"
            )
        if request.method != "GET" and "system:masters" not in request[handlers.USER_KEY].groups:
            raise errors.forbidden("faults", "", "", "only system:masters may inject faults")
        if request.method == "DELETE":
            faults.clear()
        elif request.method == "POST":
            try:
                body = json.loads(await request.read() or b"{}")
            except ValueError as error:
                raise errors.bad_request(f"the fault request is not JSON: {error}") from error
            apply_request(faults, control, body)
        return handlers.json_response(faults.wire(time.monotonic()))

    async def api(request: web.Request) -> web.StreamResponse:
        return await rest.handle(request)

    app = web.Application(middlewares=[api_middleware], client_max_size=64 * 1024 * 1024)
    app.router.add_get("/version", version)
    for probe in ("/healthz", "/readyz", "/livez"):
        app.router.add_get(probe, health)
    app.router.add_route("*", "/sandbox/requests", request_log)
    app.router.add_route("*", "/sandbox/faults", fault_endpoint)
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
        self._site: web.TCPSite | None = None
        self._host = "127.0.0.1"
        self._outages: set[asyncio.Task[None]] = set()
        self.faults = Faults()
        self.port = 0

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        await self.bootstrap()
        app = build_app(self.state, self.deleter, self.faults, self)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        self._host = host
        await self._listen(port)
        logger.info("sandbox API server listening on %s", self.url)
        return self.url

    async def _listen(self, port: int) -> None:
        assert self._runner is not None
        site = web.TCPSite(self._runner, self._host, port, ssl_context=server_ssl_context(self.material))
        await site.start()
        self._site = site
        sockets = getattr(site._server, "sockets", None) or []
        self.port = int(sockets[0].getsockname()[1]) if sockets else port

    # -- faults -------------------------------------------------------------------------------

    def act(self, outage: float, drop_watches: bool, compact: bool) -> None:
        """The one-shot faults (``FaultControl``): compact, drop watches, then an outage."""
        if compact:
            self.state.storage.compact()
            self.faults.injected["compactions"] += 1
        if drop_watches:
            self.state.storage.close_all_watches()
            self.faults.injected["watch-drops"] += 1
        if outage > 0:
            self.faults.injected["outages"] += 1
            self.faults.outage_until = time.monotonic() + outage
            task = asyncio.get_running_loop().create_task(self.outage(outage), name="apiserver-outage")
            self._outages.add(task)
            task.add_done_callback(self._outages.discard)

    async def outage(self, seconds: float) -> None:
        """Be away for ``seconds``: refuse new connections and drop open ones (watches too), then
        listen on the same port again with the same state, as a restarted kube-apiserver would.
        An outage asked for while the server is away makes the one under way last longer."""
        if self._runner is None:
            raise RuntimeError("the API server is not running")
        self.faults.outage_until = max(self.faults.outage_until, time.monotonic() + seconds)
        if self._site is None:
            return
        # Let the request that asked for the outage get its answer first.
        await asyncio.sleep(0.05)
        site, self._site = self._site, None
        await site.stop()
        self.state.storage.close_all_watches()
        server = self._runner.server
        for connection in server.connections if server is not None else ():
            connection.force_close()
        logger.warning("sandbox API server away for %.1fs (injected outage)", seconds)
        # A deadline, not an event: a later outage request moves it while we sleep.
        while (left := self.faults.outage_until - time.monotonic()) > 0:  # noqa: ASYNC110
            await asyncio.sleep(left)
        self.faults.outage_until = 0.0
        await self._listen(self.port)
        logger.warning("sandbox API server back on %s after the injected outage", self.url)

    async def stop(self) -> None:
        for task in list(self._outages):
            task.cancel()
        await asyncio.gather(*self._outages, return_exceptions=True)
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
            if self.state.storage.get(NAMESPACES, "", name) is None:
                await operations.create(self.state, namespaces, "", {"metadata": {"name": name}}, ctx)
        for name, value, description in SYSTEM_PRIORITY_CLASSES:
            if self.state.storage.get(PRIORITY_CLASSES, "", name) is None:
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
