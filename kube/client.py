"""Build a ``kubernetes_asyncio`` ``ApiClient`` from a kubeconfig file or the in-cluster config.

Public API:

- ``async make_api_client(kubeconfig=None, *, context=None) -> ApiClient`` -- the kubeconfig file
  when one is given, the pod's service account otherwise. Raises ``kube.errors.ConfigError`` with a
  readable message when neither works. The caller owns the client: ``await client.close()``.

kubernetes_asyncio opens its aiohttp session with ``trust_env=True``, which makes every request look
up ``~/.netrc`` and the proxy variables again, in a thread-pool hand-off: about a quarter of a busy
controller's time. The client made here resolves the proxy from the environment once, when it is
made (``HTTPS_PROXY``/``NO_PROXY`` keep working), and its session never looks again; ``.netrc`` is
never read (a Kubernetes client authenticates with tokens or certificates).
"""

from __future__ import annotations

import asyncio
import logging
import os

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import ApiClient, Configuration
from yarl import URL

from kube.errors import ConfigError

__all__ = ["make_api_client"]

logger = logging.getLogger(__name__)


async def make_api_client(kubeconfig: str | None = None, *, context: str | None = None) -> ApiClient:
    configuration = Configuration()
    if kubeconfig:
        if not await asyncio.to_thread(os.path.isfile, kubeconfig):
            raise ConfigError(f"kubeconfig {kubeconfig!r} does not exist or is not a file")
        try:
            await k8s_config.load_kube_config(
                config_file=kubeconfig,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        except Exception as exc:  # the kubeconfig parser fails in many ways on a malformed file
            raise ConfigError(f"cannot load kubeconfig {kubeconfig!r}: {exc}") from exc
        logger.debug("using kubeconfig %s (context %s)", kubeconfig, context or "<current>")
    else:
        if context is not None:
            raise ConfigError("a context can only be chosen together with a kubeconfig")
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except k8s_config.ConfigException as exc:
            raise ConfigError(f"no kubeconfig given and not running in a cluster: {exc}") from exc
        logger.debug("using the in-cluster service account")
    if not configuration.proxy:
        _use_environment_proxy(configuration)
    client = ApiClient(configuration)
    _stop_trusting_env(client)
    return client


def _use_environment_proxy(configuration: Configuration) -> None:
    try:
        proxy, auth = get_env_proxy_for_url(URL(configuration.host or ""))
    except LookupError:  # no proxy variable applies to this host (or NO_PROXY excludes it)
        return
    configuration.proxy = str(proxy)
    if auth is not None:
        configuration.proxy_headers = {"Proxy-Authorization": auth.encode()}


def _stop_trusting_env(client: ApiClient) -> None:
    """Swap kubernetes_asyncio's session for one on the same connector that does not trust the env."""
    rest = client.rest_client
    trusting: aiohttp.ClientSession = rest.pool_manager
    connector = trusting.connector
    trusting.detach()
    rest.pool_manager = aiohttp.ClientSession(
        connector=connector,
        trust_env=False,
        # kubernetes_asyncio's choice, kept: a watch event may carry an object of up to 1.5 MiB.
        read_bufsize=2**21,
    )
