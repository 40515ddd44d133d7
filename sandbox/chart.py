"""Render ``charts/tfgang`` offline with the real Helm SDK (helm-python-sdk) into Kubernetes objects.

The chart is the one source of what the operator registers: the sandbox takes its webhook
configurations from this render (``sandbox.webhook_configs``), and the tests apply and inspect the
same objects, so it renders exactly what ``helm template`` would. Renders are cached per argument
set for the process: callers get deep copies and may mutate them freely.

Notes on the SDK: ``lookup`` renders empty and the Capabilities are the SDK's defaults, exactly as
with ``helm template`` against no cluster.
"""

from __future__ import annotations

import copy
import functools
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import helm_python
import yaml

CHART_RELATIVE = Path("charts") / "tfgang"
CHART_ENV = "TFGANG_CHART"


def chart_dir() -> Path:
    """The chart: ``$TFGANG_CHART``, else looked up from the source tree or the working directory."""
    override = os.environ.get(CHART_ENV)
    if override:
        return Path(override)
    for root in (Path(__file__).resolve().parents[1], Path.cwd()):
        if (root / CHART_RELATIVE / "Chart.yaml").exists():
            return root / CHART_RELATIVE
    raise FileNotFoundError(f"the tfgang chart ({CHART_RELATIVE}) is not here; set {CHART_ENV}")

RELEASE_NAME = "tfgang"
DEFAULT_NAMESPACE = "tfgang"
HOOK_ANNOTATION = "helm.sh/hook"

Manifest = dict[str, Any]

# Helm's install order by kind (a subset: the kinds this chart and its CRDs use), so that a caller
# applying the list in order creates CRDs, accounts and roles before the objects that need them.
_INSTALL_ORDER = (
    "Namespace",
    "CustomResourceDefinition",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "Pod",
    "Deployment",
    "PodDisruptionBudget",
    "Issuer",
    "Certificate",
    "ServiceMonitor",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
)


class ChartRenderError(Exception):
    """A template rendered something that is not a Kubernetes object."""


@functools.cache
def load_chart() -> helm_python.Chart:
    """The chart, loaded once per session (the handle is immutable and thread-safe)."""
    return helm_python.Chart.load(chart_dir())


def render_chart(
    values: dict[str, Any] | None = None,
    namespace: str = DEFAULT_NAMESPACE,
    *,
    release_name: str = RELEASE_NAME,
    is_upgrade: bool = False,
    include_tests: bool = True,
    include_crds: bool = False,
) -> list[Manifest]:
    """The chart's objects for ``values`` in Helm's install order.

    Like ``helm template``: test hooks are included unless ``include_tests`` is false, the
    ``crds/`` files only with ``include_crds``. Raises ``helm_python.HelmValuesError`` when the
    values break values.schema.json and ``helm_python.HelmRenderError`` when a template fails.
    """
    objects = _render_cached(
        _values_key(values), namespace, release_name, is_upgrade, include_tests, include_crds
    )
    return copy.deepcopy(list(objects))


def render_manifests(
    values: dict[str, Any] | None = None,
    namespace: str = DEFAULT_NAMESPACE,
    *,
    release_name: str = RELEASE_NAME,
    is_upgrade: bool = False,
) -> dict[str, str]:
    """The raw rendered text per template path (NOTES.txt included)."""
    return dict(_render_text_cached(_values_key(values), namespace, release_name, is_upgrade))


def chart_crds() -> list[Manifest]:
    """The CustomResourceDefinitions in the chart's ``crds/`` directory."""
    return copy.deepcopy(list(_crds_cached()))


def find_objects(objects: Iterable[Manifest], kind: str, name: str | None = None) -> list[Manifest]:
    """The objects of ``kind`` (and ``name``, when given)."""
    return [
        obj for obj in objects if obj["kind"] == kind and (name is None or obj["metadata"]["name"] == name)
    ]


def find_object(objects: Iterable[Manifest], kind: str, name: str | None = None) -> Manifest:
    """The one object of ``kind`` (and ``name``); fails clearly when there is none or several."""
    matches = find_objects(objects, kind, name)
    if len(matches) != 1:
        wanted = f"{kind}/{name}" if name else kind
        raise LookupError(f"expected exactly one {wanted}, found {len(matches)}")
    return matches[0]


def is_test_hook(obj: Manifest) -> bool:
    annotations = obj.get("metadata", {}).get("annotations") or {}
    return annotations.get(HOOK_ANNOTATION) == "test"


def _values_key(values: dict[str, Any] | None) -> str:
    return json.dumps(values or {}, sort_keys=True)


@functools.cache
def _render_text_cached(
    values_key: str, namespace: str, release_name: str, is_upgrade: bool
) -> tuple[tuple[str, str], ...]:
    rendered = load_chart().render(
        json.loads(values_key),
        name=release_name,
        namespace=namespace,
        is_install=not is_upgrade,
        is_upgrade=is_upgrade,
        revision=2 if is_upgrade else 1,
    )
    return tuple(sorted(rendered.items()))


@functools.cache
def _render_cached(
    values_key: str,
    namespace: str,
    release_name: str,
    is_upgrade: bool,
    include_tests: bool,
    include_crds: bool,
) -> tuple[Manifest, ...]:
    objects: list[Manifest] = list(_crds_cached()) if include_crds else []
    for path, text in _render_text_cached(values_key, namespace, release_name, is_upgrade):
        if not path.endswith((".yaml", ".yml")):
            continue
        objects.extend(_parse_objects(path, text))
    if not include_tests:
        objects = [obj for obj in objects if not is_test_hook(obj)]
    return tuple(sorted(objects, key=_install_rank))


@functools.cache
def _crds_cached() -> tuple[Manifest, ...]:
    objects: list[Manifest] = []
    for crd in load_chart().crds:
        objects.extend(_parse_objects(crd["filename"], crd["data"]))
    return tuple(objects)


def _parse_objects(path: str, text: str) -> list[Manifest]:
    objects: list[Manifest] = []
    for document in yaml.safe_load_all(text):
        if document is None:
            continue
        if not isinstance(document, dict) or "kind" not in document or "apiVersion" not in document:
            raise ChartRenderError(
                f"{path} rendered a document that is not a Kubernetes object: {document!r}"
            )
        objects.append(document)
    return objects


def _install_rank(obj: Manifest) -> tuple[int, str, str]:
    kind = obj["kind"]
    rank = _INSTALL_ORDER.index(kind) if kind in _INSTALL_ORDER else len(_INSTALL_ORDER)
    metadata = obj.get("metadata", {})
    return rank, metadata.get("namespace", ""), metadata.get("name", "")
