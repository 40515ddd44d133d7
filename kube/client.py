"""Connect to the API server a kubeconfig file names, or the one the pod's service account is for.

Public API:

- ``async make_api_client(kubeconfig=None, *, context=None) -> Connection`` -- the kubeconfig file
  when one is given, the pod's service account otherwise. Raises ``kube.errors.ConfigError`` with a
  readable message when neither works. The caller owns the connection: ``await client.close()``.

The files are read in a thread; what they mean is ``kube.kubeconfig``'s, the session and the
credentials ``kube.connection``'s.
"""

from __future__ import annotations

import asyncio
import logging

from kube.connection import Connection
from kube.errors import ConfigError
from kube.kubeconfig import load_in_cluster, load_kubeconfig

__all__ = ["make_api_client"]

logger = logging.getLogger(__name__)


async def make_api_client(kubeconfig: str | None = None, *, context: str | None = None) -> Connection:
    if kubeconfig:
        endpoint = await asyncio.to_thread(load_kubeconfig, kubeconfig, context)
        logger.debug("using kubeconfig %s (context %s)", kubeconfig, context or "<current>")
    else:
        if context is not None:
            raise ConfigError("a context can only be chosen together with a kubeconfig")
        endpoint = await asyncio.to_thread(load_in_cluster)
        logger.debug("using the in-cluster service account")
    return Connection(endpoint)
