"""Writing a TFJob's status: a merge patch on the ``status`` subresource, only when it changed.

The patch is the smallest RFC 7386 merge patch from the status the pass planned from to the new
one (lists such as ``conditions`` go whole). If the API server stores something other than what
we sent (a schema that prunes a field, say), planning again would produce the same status on every
pass and each write would trigger the next; ``StatusWriter`` remembers what each job's last write
asked for and got back, and skips asking for the same status while the job still holds that answer.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from controller.metrics import ControllerMetrics
from controller.resources import TFJOBS
from controller.writes import OwnWrites
from kube.api import KubeApi
from kube.patches import PatchType, merge_patch
from tfjob.wire import JobStatus

logger = logging.getLogger(__name__)


def _status_of(job: Mapping[str, Any]) -> dict[str, Any]:
    status = job.get("status")
    return dict(status) if isinstance(status, Mapping) else {}


class StatusWriter:
    def __init__(self, api: KubeApi, writes: OwnWrites, metrics: ControllerMetrics) -> None:
        self._api = api
        self._writes = writes
        self._metrics = metrics
        # job uid -> (the status we last asked for, the status the server returned instead)
        self._last: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}

    def forget(self, job_uid: str) -> None:
        self._last.pop(job_uid, None)

    async def write(self, job: Mapping[str, Any], new_status: JobStatus) -> bool:
        """Patch ``job``'s status to ``new_status`` if it differs; True when a write was sent."""
        old_status = _status_of(job)
        patch = merge_patch(old_status, dict(new_status))
        if not patch:
            return False
        metadata = job.get("metadata") or {}
        uid = str(metadata.get("uid") or "")
        last = self._last.get(uid)
        if last is not None and last[0] == new_status and last[1] == old_status:
            logger.warning(
                "the API server does not keep status fields %s; not writing them again", sorted(patch)
            )
            return False
        updated = await self._api.patch(
            TFJOBS,
            str(metadata.get("name") or ""),
            {"status": patch},
            str(metadata.get("namespace") or ""),
            patch_type=PatchType.MERGE,
            subresource="status",
        )
        self._metrics.api_writes.labels(resource=TFJOBS.plural, verb="patch-status").inc()
        self._writes.wrote(TFJOBS.plural, updated)
        returned = _status_of(updated)
        if returned == new_status:
            self._last.pop(uid, None)  # the server kept everything: nothing to guard against
        else:
            self._last[uid] = (copy.deepcopy(dict(new_status)), returned)
        return True
