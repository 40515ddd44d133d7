"""One API server to talk to: its URL, its TLS settings and proxy, credentials, and the two HTTP
clients that use them.

Public API:

- ``Connection(endpoint)`` -- made inside a running loop; the caller owns it
  (``await close()``).
  - ``host`` -- the server URL, without a trailing slash; ``user_agent`` -- settable.
  - ``http`` -- the ``kube.http.HttpPool`` for unary requests and watches (same TLS context, server
    name and proxy as the session).
  - ``session`` -- the ``aiohttp.ClientSession`` for log streams (``trust_env=False``: no ``.netrc``
    or proxy lookup per request; the proxy is resolved once, here).
  - ``request_options`` -- the keyword arguments every session request needs (proxy, TLS server
    name).
  - ``async headers(accept, content_type=None) -> dict[str, str]`` -- with authorization.
  - ``rejected()`` -- the server answered 401: credentials are fetched anew.

This replaces kubernetes_asyncio's ``ApiClient``: importing its generated models costs a process
about 40 MiB and two seconds of start-up, and ``kube.api`` never used them.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Mapping
from typing import Any, Final

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from kube.credentials import credentials_for
from kube.errors import ConfigError
from kube.http import MAX_CONNECTIONS, HttpPool
from kube.kubeconfig import Endpoint

__all__ = ["Connection"]

# The session's read buffer: a followed log's chunks arrive in reads of up to this size.
READ_BUFFER: Final = 2**21


class Connection:
    def __init__(self, endpoint: Endpoint) -> None:
        self.host = endpoint.server
        self.user_agent: str | None = None
        self._credentials = credentials_for(endpoint)
        options: dict[str, Any] = {}
        proxy, proxy_auth = _proxy(endpoint)
        if proxy is not None:
            options["proxy"] = proxy
            if proxy_auth is not None:
                options["proxy_headers"] = {"Proxy-Authorization": proxy_auth}
        if endpoint.tls_server_name:
            options["server_hostname"] = endpoint.tls_server_name
        self.request_options: Mapping[str, Any] = options
        context = _ssl_context(endpoint)
        try:
            self.http = HttpPool(
                self.host, context, server_hostname=endpoint.tls_server_name, proxy=proxy,
                proxy_authorization=proxy_auth,
            )
        except ValueError as exc:
            raise ConfigError(f"cannot use the server {self.host!r}: {exc}") from exc
        # Log streams hold one connection each, in a pool of their own.
        connector = aiohttp.TCPConnector(limit=MAX_CONNECTIONS, ssl=context)
        self.session = aiohttp.ClientSession(
            connector=connector, trust_env=False, read_bufsize=READ_BUFFER, auto_decompress=True
        )

    async def headers(self, accept: str, content_type: str | None = None) -> dict[str, str]:
        headers = {"Accept": accept}
        if self.user_agent:
            headers["User-Agent"] = self.user_agent
        if content_type is not None:
            headers["Content-Type"] = content_type
        authorization = await self._credentials.authorization()
        if authorization is not None:
            headers["Authorization"] = authorization
        return headers

    def rejected(self) -> None:
        self._credentials.rejected()

    async def close(self) -> None:
        self.http.close()
        await self.session.close()


def _proxy(endpoint: Endpoint) -> tuple[str | None, str | None]:
    if endpoint.proxy_url:
        return endpoint.proxy_url, None
    try:
        proxy, auth = get_env_proxy_for_url(URL(endpoint.server))
    except LookupError:  # no proxy variable applies to this host (or NO_PROXY excludes it)
        return None, None
    return str(proxy), None if auth is None else auth.encode()


def _ssl_context(endpoint: Endpoint) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(
            cadata=endpoint.ca_pem.decode("ascii") if endpoint.ca_pem else None
        )
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"the cluster's certificate authority cannot be loaded: {exc}") from exc
    # Go's verifier, which kubectl and kube-apiserver use, does not insist on what Python's strict
    # mode does (e.g. a CA's key usage being marked critical).
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    if endpoint.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if endpoint.client_cert is not None or endpoint.client_key is not None:
        if endpoint.client_cert is None or endpoint.client_key is None:
            raise ConfigError("a client certificate needs both its certificate and its key")
        _load_client_certificate(context, endpoint.client_cert, endpoint.client_key)
    return context


def _load_client_certificate(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    # The ssl module loads a key pair only from files: a private directory, gone once loaded.
    with tempfile.TemporaryDirectory(prefix="tfgang-client-cert-") as directory:
        cert_path = os.path.join(directory, "tls.crt")
        key_path = os.path.join(directory, "tls.key")
        for path, data in ((cert_path, cert_pem), (key_path, key_pem)):
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with contextlib.closing(os.fdopen(descriptor, "wb")) as handle:
                handle.write(data)
        try:
            context.load_cert_chain(cert_path, key_path)
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"the client certificate or key cannot be loaded: {exc}") from exc
