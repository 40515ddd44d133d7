"""A job's facts and TF_CONFIG computed once per job version, not once per pod: the hot path of
pod admission.

``tfjob.facts.read_facts`` defaults a copy of the whole job, and ``tfjob.tfconfig.tf_config``
rebuilds the cluster map on every call; together they would be most of a pod admission's cost.
So the facts are kept per job version (``tfjob.facts.job_version``). In the normal form
only the ``task`` object differs between the replicas of one job, so the job's first TF_CONFIG is
split around its task object once, and every other replica's value is the two halves around its
own task. The split is
used only when the reference value contains its task object exactly once; the sparse form
(``enableDynamicWorker``) and anything unexpected go to ``tf_config`` every time. Tests compare
both paths for every replica of every fixture job.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass

from tfjob.facts import JobFacts, JobVersion, job_version, read_facts
from tfjob.tfconfig import tf_config
from tfjob.wire import TFJob

# Jobs whose pods are being admitted right now; a gang's pods arrive together, so a small
# memory suffices, and it bounds memory whatever the number of jobs.
DEFAULT_CAPACITY = 2048

_NOT_DISTRIBUTED = ("", "")


def _task(rtype: str, index: int) -> str:
    # What json.dumps({"type": ..., "index": ...}, separators=(",", ":")) gives, without its overhead.
    return f'{{"type":{json.dumps(rtype.lower(), ensure_ascii=False)},"index":{index}}}'


@dataclass(frozen=True)
class _Entry:
    facts: JobFacts
    halves: tuple[str, str] | None  # None: compute every time (the sparse form, or no clean split)


class TFConfigMemo:
    def __init__(self, *, cluster_domain: str = "", capacity: int = DEFAULT_CAPACITY) -> None:
        self._cluster_domain = cluster_domain
        self._capacity = capacity
        self._entries: OrderedDict[JobVersion, _Entry] = OrderedDict()

    def facts(self, job: TFJob) -> JobFacts:
        """Equal to ``tfjob.facts.read_facts(job)``, read once per job version."""
        return self._entry(job).facts

    def tf_config(self, job: TFJob, rtype: str, index: int) -> str | None:
        """Equal to ``tfjob.tfconfig.tf_config(read_facts(job), rtype, index, cluster_domain=...)``."""
        entry = self._entry(job)
        if entry.halves is None:
            return tf_config(entry.facts, rtype, index, cluster_domain=self._cluster_domain)
        if entry.halves is _NOT_DISTRIBUTED:
            return None
        return entry.halves[0] + _task(rtype, index) + entry.halves[1]

    def _entry(self, job: TFJob) -> _Entry:
        key = job_version(job)
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            return entry
        facts = read_facts(job)
        entry = _Entry(facts, self._split(facts))
        self._entries[key] = entry
        if len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        return entry

    def _split(self, facts: JobFacts) -> tuple[str, str] | None:
        if facts.dynamic_worker:
            return None
        rtype, index = (facts.replica_types[0].rtype, 0) if facts.replica_types else ("", 0)
        reference = tf_config(facts, rtype, index, cluster_domain=self._cluster_domain)
        if reference is None:
            return _NOT_DISTRIBUTED
        task = _task(rtype, index)
        marker = f'"task":{task}'
        if reference.count(marker) != 1:
            return None
        head, tail = reference.split(marker)
        return head + '"task":', tail

    def __len__(self) -> int:
        return len(self._entries)
