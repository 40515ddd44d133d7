"""Connect to the API server a kubeconfig file names, or the one the pod's service account is for,
through kubernetes_asyncio: its ``config`` loads the credentials, its ``ApiClient`` holds the one
aiohttp session every request, watch and log stream of the process goes through.

Public API:

- ``async make_api_client(kubeconfig=None, *, context=None) -> KubeClient`` -- the kubeconfig file
  when one is given (its current context, else ``context``), the pod's service account otherwise.
  Raises ``kube.errors.ConfigError`` with a readable message when neither works. The caller owns
  the client: ``await client.close()``.
- ``context_namespace(kubeconfig, context=None) -> str`` -- the namespace the context (else the
  current one) names, "" if none, as kubectl reads it; ``ConfigError`` when the file or context
  cannot be read.
- ``KubeClient`` -- the library's ``ApiClient`` (``api_client``) and what ``KubeApi`` reads off it
  per request:
  - ``host`` -- the server URL without a trailing slash; ``user_agent`` -- settable (the
    ``ApiClient``'s own).
  - ``session`` -- the ``ApiClient``'s aiohttp session, rebuilt on the same connector (same TLS
    context) with ``trust_env=False``, so no request looks up ``.netrc`` or proxy variables.
  - ``request_options`` -- what every request through ``session`` adds: the proxy (the kubeconfig's
    ``proxy-url``, else the environment's as kubectl reads it, ``kube.proxy``, decided once), its
    headers, the TLS server name.
  - ``async headers(accept, content_type=None) -> dict[str, str]`` -- with the ``ApiClient``'s
    default headers (its User-Agent; ``Accept-Encoding: identity``) and the configuration's
    current authorization (its refresh hook runs first).
  - ``rejected()`` -- the server answered 401: the kubeconfig is loaded again before the next
    request (the exec plugin run again, the token file read again).
  - ``async close()``.

What the library does and what is added here:

- in-cluster: ``load_incluster_config`` reads the service account's token and CA and installs a
  hook that reads the token file again once a minute (the kubelet rotates projected tokens; this is
  client-go's period too). A 401 changes nothing there: client-go does not re-read on 401 either.
- kubeconfig: ``load_kube_config`` picks the context and reads server, CA, client certificate,
  token, tokenFile, basic auth, exec plugin and ``proxy-url``. The library reads a ``tokenFile``
  once and runs an exec plugin once; kubectl re-reads the one and runs the other again once its
  token expires or the server answers 401. The hook installed here does that through the library:
  a token with an ``expirationTimestamp`` is renewed by the library's own
  ``load_from_exec_plugin`` (which runs the plugin once the token is within 5 minutes of expiry);
  any other kubeconfig is loaded again by ``load_kube_config`` once a minute and after a 401.
- TLS: the library's context; ``disable_strict_ssl_verification``, as Go's verifier (kubectl's,
  kube-apiserver's) does not insist on what Python's strict mode does (a CA's key usage marked
  critical, say).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import math
import os
import time
from typing import Any, Final

import aiohttp
import yaml
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config.config_exception import ConfigException
from kubernetes_asyncio.config.kube_config import KubeConfigLoader
from yarl import URL

from kube.errors import ConfigError, ConnectionFailed
from kube.proxy import proxy_from_environment

__all__ = ["KubeClient", "context_namespace", "make_api_client"]

logger = logging.getLogger(__name__)

# The session's read buffer, as the library sets it: a watch event of a large object, a followed
# log's chunks arrive in reads of up to this size, and reading pauses past twice this much unread.
READ_BUFFER: Final = 2**21
# Requests in parallel to the server (the library's pool size).
MAX_CONNECTIONS: Final = 100
# How often a kubeconfig's token file (and whatever else it names) is read again: client-go's period.
RELOAD_PERIOD: Final = 60.0
# The library renews an exec plugin's token this long before it expires (its EXPIRY_SKEW_PREVENTION_DELAY).
EXPIRY_MARGIN: Final = 300.0
# How long closing a client waits for a credential plugin still running.
RENEWAL_GRACE: Final = 10.0
# Loading a kubeconfig can fail in these ways beyond the library's own ConfigException.
_LOAD_ERRORS = (ConfigException, OSError, ValueError, KeyError, TypeError, AttributeError, AssertionError)


class _KubeconfigCredentials:
    """The configuration's ``refresh_api_key_hook`` for a kubeconfig: the library renews what it
    knows how to (an exec token with an expiry), and loads the kubeconfig again for the rest."""

    def __init__(self, path: str, context: str | None, loader: KubeConfigLoader) -> None:
        self._path = path
        self._context = context
        self._stale = False
        self._renewal: asyncio.Task[None] | None = None
        self._loaded(loader)

    def _loaded(self, loader: KubeConfigLoader) -> None:
        self._loader = loader
        expiry = getattr(loader, "exec_plugin_expiry", None)
        if isinstance(expiry, datetime.datetime):
            # An exec token that expires is renewed by the library itself, 5 minutes early.
            self._reload_at = math.inf
            self._renew_at = expiry.timestamp() - EXPIRY_MARGIN
        else:
            self._reload_at = time.monotonic() + RELOAD_PERIOD
            self._renew_at = math.inf

    def rejected(self) -> None:
        self._stale = True

    async def __call__(self, configuration: Configuration) -> None:
        if self._stale or time.monotonic() >= self._reload_at:
            reload = True
        elif time.time() >= self._renew_at:
            reload = False
        else:
            return
        # One renewal for all the requests that found the token stale; a request that gives up
        # (its time limit) leaves the renewal to finish for the next ones.
        if self._renewal is None or self._renewal.done():
            self._renewal = asyncio.create_task(self._renew(configuration, reload=reload))
        try:
            await asyncio.shield(self._renewal)
        except _LOAD_ERRORS as exc:
            # No HTTP answer was had; a later attempt may succeed (the plugin's backend may be back).
            raise ConnectionFailed(
                0, "CredentialsUnavailable", f"cannot renew the credentials: {exc}"
            ) from exc

    async def _renew(self, configuration: Configuration, *, reload: bool) -> None:
        if reload:
            fresh = Configuration()
            loader = await kube_config.load_kube_config(
                config_file=self._path,
                context=self._context,
                client_configuration=fresh,
                persist_config=False,
            )
            self._stale = False
            token = fresh.api_key.get("BearerToken")
        else:
            loader = self._loader
            await loader.load_from_exec_plugin()
            token = loader.token
        self._loaded(loader)
        if token is not None:
            configuration.api_key["BearerToken"] = _clean(token)

    async def close(self) -> None:
        """Let a plugin run still going finish, so no process is left behind."""
        if self._renewal is not None and not self._renewal.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._renewal), RENEWAL_GRACE)


def _clean(authorization: str) -> str:
    # A token file written with a trailing newline (as `echo` does) is sent without it, as kubectl does.
    return authorization.strip()


class KubeClient:
    def __init__(self, api_client: ApiClient, credentials: _KubeconfigCredentials | None = None) -> None:
        self.api_client = api_client
        configuration = api_client.configuration
        self.host: str = (configuration.host or "").rstrip("/")
        self._credentials = credentials
        options: dict[str, Any] = {}
        proxy = configuration.proxy or proxy_from_environment(self.host)
        if proxy:
            options["proxy"] = proxy
            if configuration.proxy_headers:
                options["proxy_headers"] = configuration.proxy_headers
            elif (auth := aiohttp.BasicAuth.from_url(URL(proxy))) is not None:
                options["proxy_headers"] = {"Proxy-Authorization": auth.encode()}
        if configuration.tls_server_name:
            options["server_hostname"] = configuration.tls_server_name
        self.request_options = options
        # Answers uncompressed: kube-apiserver v1.20 gzips every answer a client accepts gzip for
        # (later releases only those over 128 KiB), and on a cluster's network the compression
        # costs both sides more CPU than the bytes it saves.
        api_client.set_default_header("Accept-Encoding", "identity")
        rest = api_client.rest_client
        library_session: aiohttp.ClientSession = rest.pool_manager
        connector = library_session.connector
        library_session.detach()  # the connector (and its TLS context) is kept; the session is not
        # trust_env=False: the library's session would look up .netrc and the proxy variables per request.
        self.session = aiohttp.ClientSession(connector=connector, trust_env=False, read_bufsize=READ_BUFFER)
        rest.pool_manager = self.session
        if proxy:  # the same for anything sent through the library's own request path
            rest.proxy = proxy
            rest.proxy_headers = options.get("proxy_headers") or {}

    @property
    def user_agent(self) -> str:
        return str(self.api_client.user_agent)

    @user_agent.setter
    def user_agent(self, value: str) -> None:
        self.api_client.user_agent = value

    async def headers(self, accept: str, content_type: str | None = None) -> dict[str, str]:
        headers = {"Accept": accept, **self.api_client.default_headers}
        if content_type is not None:
            headers["Content-Type"] = content_type
        await self.api_client.update_params_for_auth(headers, [], ["BearerToken"])
        return headers

    def rejected(self) -> None:
        if self._credentials is not None:
            self._credentials.rejected()

    async def close(self) -> None:
        if self._credentials is not None:
            await self._credentials.close()
        await self.api_client.close()


def _configuration() -> Configuration:
    configuration = Configuration()
    configuration.disable_strict_ssl_verification = True
    configuration.connection_pool_maxsize = MAX_CONNECTIONS
    return configuration


async def make_api_client(kubeconfig: str | None = None, *, context: str | None = None) -> KubeClient:
    configuration = _configuration()
    credentials: _KubeconfigCredentials | None = None
    if kubeconfig:
        if not await asyncio.to_thread(os.path.isfile, kubeconfig):
            raise ConfigError(f"kubeconfig {kubeconfig!r} does not exist or is not a file")
        try:
            loader = await kube_config.load_kube_config(
                config_file=kubeconfig,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        except (*_LOAD_ERRORS, yaml.YAMLError) as exc:  # yaml: the library's kubeconfig parser
            raise ConfigError(f"cannot load kubeconfig {kubeconfig!r}: {exc}") from exc
        credentials = _KubeconfigCredentials(kubeconfig, context, loader)
        configuration.refresh_api_key_hook = credentials
        if "BearerToken" in configuration.api_key:
            configuration.api_key["BearerToken"] = _clean(configuration.api_key["BearerToken"])
        logger.debug("using kubeconfig %s (context %s)", kubeconfig, context or "<current>")
    else:
        if context is not None:
            raise ConfigError("a context can only be chosen together with a kubeconfig")
        try:
            kube_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except (ConfigException, OSError) as exc:
            raise ConfigError(f"no kubeconfig given and not running in a cluster: {exc}") from exc
        logger.debug("using the in-cluster service account")
    if not (configuration.host or "").startswith(("https://", "http://")):
        raise ConfigError(f"cluster server {configuration.host!r} is not an http(s) URL")
    try:
        api_client = ApiClient(configuration)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        raise ConfigError(f"cannot use the cluster's TLS settings: {exc}") from exc
    return KubeClient(api_client, credentials)


def context_namespace(kubeconfig: str, context: str | None = None) -> str:
    try:
        contexts, current = kube_config.list_kube_config_contexts(kubeconfig)
        chosen = current if context is None else next((c for c in contexts if c.get("name") == context), None)
    except (*_LOAD_ERRORS, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot load kubeconfig {kubeconfig!r}: {exc}") from exc
    if not isinstance(chosen, dict):
        raise ConfigError(f"cannot load kubeconfig {kubeconfig!r}: context {context!r} does not exist")
    namespace = (chosen.get("context") or {}).get("namespace")
    return namespace if isinstance(namespace, str) else ""
