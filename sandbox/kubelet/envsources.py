"""Fetch the ConfigMaps and Secrets a pod's environment refers to, as plain string maps."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Any

from kube.api import KubeApi
from kube.errors import NotFound
from kube.resources import CONFIGMAPS, SECRETS
from sandbox.kubelet.envvars import CONFIG_MAP, SourceKey, referenced_sources


def _decode_secret(value: str) -> str:
    try:
        return base64.b64decode(value, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return value


async def fetch_env_sources(
    api: KubeApi, namespace: str, containers: Iterable[Mapping[str, Any]]
) -> dict[SourceKey, Mapping[str, str]]:
    """Every referenced source that exists; a missing one is simply absent (``resolve_env`` decides)."""
    keys: set[SourceKey] = set()
    for container in containers:
        keys |= referenced_sources(container)
    found: dict[SourceKey, Mapping[str, str]] = {}
    for kind, name in sorted(keys):
        try:
            obj = await api.get(CONFIGMAPS if kind == CONFIG_MAP else SECRETS, name, namespace)
        except NotFound:
            continue
        data = {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
        if kind != CONFIG_MAP:
            data = {k: _decode_secret(v) for k, v in data.items()}
        found[(kind, name)] = data
    return found
