"""Build a ``kubernetes_asyncio`` ``ApiClient`` from a kubeconfig file or the in-cluster config.

Public API:

- ``async make_api_client(kubeconfig=None, *, context=None) -> ApiClient`` -- the kubeconfig file
  when one is given, the pod's service account otherwise. Raises ``kube.errors.ConfigError`` with a
  readable message when neither works. The caller owns the client: ``await client.close()``.
"""

from __future__ import annotations

import asyncio
import logging
import os

from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import ApiClient, Configuration

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
                config_file=kubeconfig, context=context, client_configuration=configuration,
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
    return ApiClient(configuration)
