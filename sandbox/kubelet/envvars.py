"""A container's environment and command line, resolved as the kubelet does. Pure.

- ``envFrom`` first, then ``env`` (later entries win);
- ``value`` strings expand ``$(NAME)`` from variables defined before them; ``$$`` is a literal ``$``;
  an undefined ``$(NAME)`` stays as written;
- ``valueFrom.fieldRef`` reads the pod (metadata.name/namespace/uid, labels and annotations,
  spec.nodeName, spec.serviceAccountName, status.podIP/hostIP and their plural forms);
- ``valueFrom.resourceFieldRef`` reads the container's limits/requests (limits fall back to the
  node's allocatable) divided by ``divisor``, rounded up;
- ``configMapKeyRef``/``secretKeyRef`` and ``envFrom`` read from ``sources``, which the caller
  fetched beforehand (see ``referenced_sources``); a missing non-optional one is an ``EnvError``,
  which the node agent reports as ``CreateContainerConfigError``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from kubeobjects.quantity import QuantityError, parse_milli

CONFIG_MAP: Final = "ConfigMap"
SECRET: Final = "Secret"
_SUBSCRIPT: Final = re.compile(r"^metadata\.(labels|annotations)\['([^']*)'\]$")

SourceKey = tuple[str, str]
"""(``ConfigMap`` or ``Secret``, name) in the pod's namespace."""


class EnvError(ValueError):
    """The container's environment cannot be built; the message is shown on the container."""


@dataclass(frozen=True)
class PodFacts:
    """What a container environment may read about its pod beyond the pod object itself."""

    pod_ip: str
    host_ip: str
    node_allocatable: Mapping[str, str] = field(default_factory=dict)


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                end = text.find(")", i + 2)
                if end != -1:
                    name = text[i + 2 : end]
                    out.append(env[name] if name in env else text[i : end + 1])
                    i = end + 1
                    continue
        out.append(char)
        i += 1
    return "".join(out)


def referenced_sources(container: Mapping[str, Any]) -> set[SourceKey]:
    keys: set[SourceKey] = set()
    for source in container.get("envFrom") or []:
        if source.get("configMapRef"):
            keys.add((CONFIG_MAP, str(source["configMapRef"].get("name", ""))))
        if source.get("secretRef"):
            keys.add((SECRET, str(source["secretRef"].get("name", ""))))
    for var in container.get("env") or []:
        value_from = var.get("valueFrom") or {}
        if value_from.get("configMapKeyRef"):
            keys.add((CONFIG_MAP, str(value_from["configMapKeyRef"].get("name", ""))))
        if value_from.get("secretKeyRef"):
            keys.add((SECRET, str(value_from["secretKeyRef"].get("name", ""))))
    return keys


def _field(pod: Mapping[str, Any], path: str, facts: PodFacts) -> str:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": facts.pod_ip,
        "status.podIPs": facts.pod_ip,
        "status.hostIP": facts.host_ip,
        "status.hostIPs": facts.host_ip,
    }
    if path in simple:
        return str(simple[path] or "")
    subscript = _SUBSCRIPT.match(path)
    if subscript:
        return str((meta.get(subscript.group(1)) or {}).get(subscript.group(2), ""))
    raise EnvError(f"unsupported fieldRef fieldPath {path!r}")


def _resource(container: Mapping[str, Any], ref: Mapping[str, Any], facts: PodFacts) -> str:
    resource = str(ref.get("resource", ""))
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or name not in ("cpu", "memory", "ephemeral-storage"):
        raise EnvError(f"unsupported resourceFieldRef resource {resource!r}")
    resources = container.get("resources") or {}
    value = (resources.get(kind) or {}).get(name)
    if value is None and kind == "requests":
        value = (resources.get("limits") or {}).get(name)
    if value is None:
        value = facts.node_allocatable.get(name, "0")
    try:
        amount = parse_milli(value)
        divisor = parse_milli(ref.get("divisor") or "1")
    except QuantityError as error:
        raise EnvError(f"resourceFieldRef {resource}: {error}") from error
    if divisor == 0:
        raise EnvError(f"resourceFieldRef {resource}: divisor must not be zero")
    return str(math.ceil(amount / divisor))


def _from_source(
    ref: Mapping[str, Any], kind: str, sources: Mapping[SourceKey, Mapping[str, str]], var: str
) -> str | None:
    name = str(ref.get("name", ""))
    data = sources.get((kind, name))
    key = str(ref.get("key", ""))
    if data is not None and key in data:
        return data[key]
    if ref.get("optional"):
        return None
    if data is None:
        raise EnvError(f'{kind.lower()} "{name}" not found')
    raise EnvError(f"couldn't find key {key} in {kind} {name} (variable {var})")


def resolve_env(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    facts: PodFacts,
    sources: Mapping[SourceKey, Mapping[str, str]] | None = None,
) -> dict[str, str]:
    sources = sources or {}
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        for kind, ref_key in ((CONFIG_MAP, "configMapRef"), (SECRET, "secretRef")):
            ref = source.get(ref_key)
            if not ref:
                continue
            data = sources.get((kind, str(ref.get("name", ""))))
            if data is None:
                if ref.get("optional"):
                    continue
                raise EnvError(f'{kind.lower()} "{ref.get("name", "")}" not found')
            env.update({prefix + k: v for k, v in data.items()})
    for var in container.get("env") or []:
        name = str(var.get("name", ""))
        if not name:
            raise EnvError("an environment variable has no name")
        value_from = var.get("valueFrom")
        if not value_from:
            env[name] = expand(str(var.get("value") or ""), env)
            continue
        if value_from.get("fieldRef"):
            env[name] = _field(pod, str(value_from["fieldRef"].get("fieldPath", "")), facts)
        elif value_from.get("resourceFieldRef"):
            env[name] = _resource(container, value_from["resourceFieldRef"], facts)
        elif value_from.get("configMapKeyRef") or value_from.get("secretKeyRef"):
            kind = CONFIG_MAP if value_from.get("configMapKeyRef") else SECRET
            ref = value_from.get("configMapKeyRef") or value_from.get("secretKeyRef")
            value = _from_source(ref, kind, sources, name)
            if value is not None:
                env[name] = value
        else:
            raise EnvError(f"environment variable {name}: unsupported valueFrom {sorted(value_from)}")
    return env


def command_line(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """``command`` + ``args`` with ``$(VAR)`` expanded. The image is ignored, so a container
    with neither has nothing to run: it idles until stopped, like a server would."""
    command = [expand(str(part), env) for part in container.get("command") or []]
    args = [expand(str(part), env) for part in container.get("args") or []]
    return command + args


@dataclass(frozen=True)
class Launch:
    """How to start one container instance as a local process."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path


def plan_launch(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    facts: PodFacts,
    sources: Mapping[SourceKey, Mapping[str, str]],
    scratch: Path,
    host_path: str,
) -> Launch:
    """The process for ``container``: its resolved environment on top of a minimal base (the host's
    PATH, a per-pod HOME, HOSTNAME), its command line, and its workingDir when that exists on this
    host (the image's filesystem does not), else the pod's scratch directory."""
    env = resolve_env(pod, container, facts, sources)
    meta = pod.get("metadata") or {}
    process_env = {"PATH": host_path, "HOME": str(scratch), "HOSTNAME": str(meta.get("name", ""))}
    process_env.update(env)
    working_dir = str(container.get("workingDir") or "")
    cwd = Path(working_dir) if working_dir and Path(working_dir).is_dir() else scratch
    return Launch(tuple(command_line(container, env)), process_env, cwd)
