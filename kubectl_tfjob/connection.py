"""Which cluster, user and namespace, chosen the way kubectl chooses them.

``--kubeconfig`` wins, then the first existing file of ``$KUBECONFIG``, then ``~/.kube/config``
(several ``$KUBECONFIG`` files are not merged as kubectl merges them). ``--context`` picks the
context, else the kubeconfig's current one; ``-n`` the namespace, else the context's, else
``default``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

from kube.api import KubeApi
from kube.client import context_namespace, make_api_client
from kube.errors import ConfigError

USER_AGENT = "kubectl-tfjob"


@dataclass(frozen=True)
class Target:
    kubeconfig: str
    context: str | None
    namespace: str


def kubeconfig_path(flag: str | None, environ: Mapping[str, str]) -> str:
    if flag:
        return flag
    listed = [path for path in environ.get("KUBECONFIG", "").split(os.pathsep) if path]
    for path in listed:
        if os.path.isfile(os.path.expanduser(path)):
            return os.path.expanduser(path)
    if listed:
        raise ConfigError(f"none of the files in KUBECONFIG exists: {environ['KUBECONFIG']}")
    return os.path.expanduser("~/.kube/config")


def resolve(
    kubeconfig: str | None, context: str | None, namespace: str | None, environ: Mapping[str, str]
) -> Target:
    path = kubeconfig_path(kubeconfig, environ)
    if not os.path.isfile(path):
        raise ConfigError(f"kubeconfig {path!r} does not exist: give --kubeconfig or set KUBECONFIG")
    return Target(path, context, namespace or context_namespace(path, context) or "default")


@contextlib.asynccontextmanager
async def connect(target: Target) -> AsyncIterator[KubeApi]:
    client = await make_api_client(target.kubeconfig, context=target.context)
    api = KubeApi(client, user_agent=USER_AGENT)
    try:
        yield api
    finally:
        await api.close()
