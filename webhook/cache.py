"""A read-through TFJob cache for admission: a watch-fed store, with a GET on a miss.

The store keeps only what admitting a pod needs of each TFJob (``admission_view``): replica keys and
counts, the ``tensorflow`` container's ports, the template's ``schedulerName``,
``enableDynamicWorker`` and ``runPolicy.managedBy``. Full TFJobs carry whole pod templates; ten
thousand of them would not fit the webhook's memory budget, and the mutation reads nothing else.

A pod may be admitted before the watch has delivered its TFJob (the controller creates pods right
after it sees the job), so a miss is answered by a GET. A missing TFJob is ``None``; any other
failure to read it raises ``JobLookupFailed``, which the webhook turns into a retryable denial.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Protocol, cast

import orjson

from kube.api import KubeApi
from kube.errors import ApiError, NotFound
from kube.reflector import Reflector
from kube.resources import Resource
from kube.store import Store
from tfjob.constants import CONTAINER_NAME, GROUP, KIND, PLURAL, VERSION
from tfjob.wire import TFJob

logger = logging.getLogger(__name__)

TFJOBS = Resource(GROUP, VERSION, PLURAL, KIND)
LIST_PAGE_SIZE = 250


class JobLookupFailed(Exception):
    """The TFJob could not be read (API unreachable, forbidden, timed out)."""


class JobLookup(Protocol):
    async def get(self, namespace: str, name: str) -> TFJob | None: ...


class _Shapes:
    """Hash-consing of spec views: jobs made from the same templates share one read-only copy.

    Bounded: when full it starts over (views already built keep what they share), so neither many
    distinct shapes nor deleted jobs can grow it without limit.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self._capacity = capacity
        self._shared: dict[bytes, Any] = {}

    def share(self, value: Any) -> Any:
        key = orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)
        shared = self._shared.get(key)
        if shared is None:
            if len(self._shared) >= self._capacity:
                self._shared.clear()
            self._shared[key] = shared = value
        return shared


_SHAPES = _Shapes()


def admission_view(job: dict[str, Any]) -> dict[str, Any]:
    """The part of a TFJob that pod admission reads; every other field is dropped.

    Views are read-only: spec views equal between jobs are one shared object.
    """
    metadata = job.get("metadata") or {}
    view_metadata = {
        key: metadata[key] for key in ("name", "namespace", "uid", "resourceVersion") if key in metadata
    }
    if isinstance(view_metadata.get("namespace"), str):
        view_metadata["namespace"] = sys.intern(view_metadata["namespace"])
    spec = job.get("spec")
    view: dict[str, Any] = {
        "apiVersion": job.get("apiVersion"),
        "kind": job.get("kind"),
        "metadata": view_metadata,
    }
    if not isinstance(spec, dict):
        return view
    view_spec: dict[str, Any] = {}
    if "enableDynamicWorker" in spec:
        view_spec["enableDynamicWorker"] = spec["enableDynamicWorker"]
    run_policy = spec.get("runPolicy")
    if isinstance(run_policy, dict) and "managedBy" in run_policy:
        view_spec["runPolicy"] = {"managedBy": run_policy["managedBy"]}
    replica_specs = spec.get("tfReplicaSpecs")
    if isinstance(replica_specs, dict):
        view_spec["tfReplicaSpecs"] = {
            sys.intern(str(key)): _replica_view(replica_spec) for key, replica_spec in replica_specs.items()
        }
    view["spec"] = _SHAPES.share(view_spec)
    return view


def _replica_view(replica_spec: object) -> dict[str, Any] | None:
    if not isinstance(replica_spec, dict):
        return None
    view: dict[str, Any] = {}
    if "replicas" in replica_spec:
        view["replicas"] = replica_spec["replicas"]
    template = replica_spec.get("template")
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(pod_spec, dict):
        return view
    view_pod_spec: dict[str, Any] = {}
    if "schedulerName" in pod_spec:
        view_pod_spec["schedulerName"] = pod_spec["schedulerName"]
    containers = pod_spec.get("containers")
    if isinstance(containers, list):
        tensorflow = next(
            (c for c in containers if isinstance(c, dict) and c.get("name") == CONTAINER_NAME), None
        )
        if tensorflow is not None:
            kept = {"name": CONTAINER_NAME}
            if "ports" in tensorflow:
                kept["ports"] = tensorflow["ports"]
            view_pod_spec["containers"] = [kept]
        else:
            view_pod_spec["containers"] = []
    view["template"] = {"spec": view_pod_spec}
    return view


class TFJobCache:
    """Keeps the ``admission_view`` of every TFJob, fed by a watch. ``api`` answers GETs on a miss;
    the watch and list go through ``list_api`` when given (a second ``KubeApi`` on the same client,
    so its rate limiter never starves those GETs), else through ``api``.

    The view is taken as each list page arrives (the reflector's transform): with full objects
    the first list alone would hold every pod template of every job at once (over 100 MiB for
    10,000 seed-like jobs), a peak the process would keep as RSS."""

    def __init__(
        self, api: KubeApi, *, namespace: str | None = None, list_api: KubeApi | None = None
    ) -> None:
        self._api = api
        self._store = Store()
        # Small pages: each page is decoded whole before it is trimmed, so the page size bounds
        # the transient memory of a (re)list.
        self._reflector = Reflector(
            list_api or api,
            TFJOBS,
            self._store,
            namespace=namespace,
            page_size=LIST_PAGE_SIZE,
            transform=admission_view,
        )
        self.misses = 0

    @property
    def synced(self) -> bool:
        return self._reflector.synced

    @property
    def store(self) -> Store:
        return self._store

    async def run(self) -> None:
        await self._reflector.run()

    async def wait_synced(self) -> None:
        await self._reflector.wait_synced()

    async def get(self, namespace: str, name: str) -> TFJob | None:
        cached = self._store.get(f"{namespace}/{name}")
        if cached is not None:
            return cast(TFJob, cached)
        self.misses += 1
        try:
            job = await self._api.get(TFJOBS, name, namespace)
        except NotFound:
            return None
        except (TimeoutError, ApiError, ValueError) as exc:
            raise JobLookupFailed(f"cannot read TFJob {namespace}/{name}: {exc}") from exc
        return cast(TFJob, admission_view(job))


class StaticJobs:
    """A fixed set of TFJobs (tests, benchmarks): the lookup without an API server."""

    def __init__(self, jobs: list[dict[str, Any]]) -> None:
        self._store = Store()
        for job in jobs:
            self._store.upsert(admission_view(job))

    async def get(self, namespace: str, name: str) -> TFJob | None:
        return cast(TFJob | None, self._store.get(f"{namespace}/{name}"))
