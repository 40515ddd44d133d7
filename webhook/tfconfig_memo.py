"""TF_CONFIG per job computed once, not once per pod: the hot path of pod admission.

``tfjob.tfconfig.tf_config`` defaults a copy of the whole job and rebuilds the cluster map on every
call, which would be most of a pod admission's cost. In the normal form only the ``task`` object
differs between the replicas of one job, so the job's first TF_CONFIG is split around its task
object once, and every other replica's value is the two halves around its own task. The split is
used only when the reference value contains its task object exactly once; the sparse form
(``enableDynamicWorker``) and anything unexpected go to ``tf_config`` every time. Tests compare
both paths for every replica of every fixture job.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from tfjob.tfconfig import tf_config
from tfjob.wire import TFJob

# Jobs whose pods are being admitted right now; a gang's pods arrive together, so a small
# memory suffices, and it bounds memory whatever the number of jobs.
DEFAULT_CAPACITY = 2048

_NOT_DISTRIBUTED = ("", "")


def _task(rtype: str, index: int) -> str:
    # What json.dumps({"type": ..., "index": ...}, separators=(",", ":")) gives, without its overhead.
    return f'{{"type":{json.dumps(rtype.lower(), ensure_ascii=False)},"index":{index}}}'


class TFConfigMemo:
    def __init__(self, *, cluster_domain: str = "", capacity: int = DEFAULT_CAPACITY) -> None:
        self._cluster_domain = cluster_domain
        self._capacity = capacity
        self._halves: OrderedDict[tuple[str, ...], tuple[str, str] | None] = OrderedDict()

    def tf_config(self, job: TFJob, rtype: str, index: int) -> str | None:
        """Equal to ``tfjob.tfconfig.tf_config(job, rtype, index, cluster_domain=...)``."""
        spec: Any = job.get("spec") or {}
        metadata: Any = job.get("metadata") or {}
        if spec.get("enableDynamicWorker"):
            return tf_config(job, rtype, index, cluster_domain=self._cluster_domain)
        key = (
            str(metadata.get("namespace", "")),
            str(metadata.get("name", "")),
            str(metadata.get("uid", "")),
            str(metadata.get("resourceVersion", "")),
        )
        halves = self._halves.get(key)
        if halves is None and key not in self._halves:
            halves = self._split(job, rtype, index)
            self._halves[key] = halves
            if len(self._halves) > self._capacity:
                self._halves.popitem(last=False)
        else:
            self._halves.move_to_end(key)
        if halves is None:
            return tf_config(job, rtype, index, cluster_domain=self._cluster_domain)
        if halves is _NOT_DISTRIBUTED:
            return None
        return halves[0] + _task(rtype, index) + halves[1]

    def _split(self, job: TFJob, rtype: str, index: int) -> tuple[str, str] | None:
        reference = tf_config(job, rtype, index, cluster_domain=self._cluster_domain)
        if reference is None:
            return _NOT_DISTRIBUTED
        task = _task(rtype, index)
        marker = f'"task":{task}'
        if reference.count(marker) != 1:
            return None
        head, tail = reference.split(marker)
        return head + '"task":', tail

    def __len__(self) -> int:
        return len(self._halves)
