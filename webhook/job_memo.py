"""Everything a pod's mutation derives from its TFJob, kept once per job version: the job's facts,
its TF_CONFIG, and the decisions already made for its pods. The hot path of pod admission.

``tfjob.facts.read_facts`` defaults a copy of the whole job, and ``tfjob.tfconfig.tf_config``
rebuilds the cluster map on every call; together they would be most of a pod admission's cost.
So one ``JobMutations`` is made per job version (``tfjob.facts.VersionMemo``, the same memo the
controller keeps its facts in) and holds:

- the facts;
- TF_CONFIG: in the normal form only the ``task`` object differs between the replicas of one job,
  so the job's first TF_CONFIG is split around its task object once, and every other replica's
  value is the two halves around its own task. The split is used only when the reference value
  contains its task object exactly once; the sparse form (``enableDynamicWorker``) and anything
  unexpected go to ``tf_config`` every time;
- whole decisions per replica and pod shape: a pod admitted again (reinvocation, a retried
  create, a dry run first) gets the stored decision, base64 patch included. The key
  (``mutate_pod``) holds everything ``mutate_pod`` reads beyond the job: replica type and index,
  where the ``tensorflow`` container is, whether it has an ``env`` list, which of the wanted
  annotations and labels it carries, whether its schedulerName is the gang scheduler's. Pods
  that already set TF_CONFIG (rare, and answered with a warning) are never remembered.

Memory is bounded whatever callers send: at most ``capacity`` job versions, and at most
``max_decisions`` decisions over all of them (past that, the least recently used jobs go whole).
Tests compare every answer with a fresh computation, for every replica of every fixture job.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Hashable

from tfjob.facts import JobFacts, ReplicaFacts, VersionMemo, read_facts
from tfjob.pods import GangMarks, gang_marks
from tfjob.settings import Settings
from tfjob.tfconfig import tf_config
from tfjob.wire import TFJob
from webhook.review import Decision, encode_patch

# Jobs whose pods are being admitted right now; a gang's pods arrive together, so a small
# memory suffices, and it bounds memory whatever the number of jobs.
DEFAULT_CAPACITY = 2048
DEFAULT_MAX_DECISIONS = 4096

DecisionKey = tuple[Hashable, ...]
_NOT_DISTRIBUTED = ("", "")


def _task(rtype: str, index: int) -> str:
    # What json.dumps({"type": ..., "index": ...}, separators=(",", ":")) gives, without its overhead.
    return f'{{"type":{json.dumps(rtype.lower(), ensure_ascii=False)},"index":{index}}}'


class JobMutations:
    """What every pod of one job version is mutated from."""

    __slots__ = ("_by_label", "_cluster_domain", "_halves", "_marks", "decisions", "facts", "kept")

    def __init__(self, job: TFJob, cluster_domain: str) -> None:
        self.facts: JobFacts = read_facts(job)
        self._cluster_domain = cluster_domain
        # None: compute every time (the sparse form, or no clean split).
        self._halves = self._split()
        self.decisions: dict[DecisionKey, Decision] = {}
        self.kept = False  # in the memo (a job without uid or resourceVersion never is)
        self._by_label: dict[str, ReplicaFacts] = {}
        for replica in self.facts.replica_types:
            self._by_label.setdefault(replica.rtype.lower(), replica)
        self._marks: dict[str, tuple[Settings, str, GangMarks]] = {}

    def replica_for_label(self, label_value: str) -> ReplicaFacts | None:
        """Equal to ``facts.replica_for_label(label_value)``."""
        return self._by_label.get(label_value)

    def gang_marks(self, replica: ReplicaFacts, job_name: str, settings: Settings) -> GangMarks:
        """Equal to ``tfjob.pods.gang_marks(replica, job_name, settings)``; shared, not to be changed."""
        kept = self._marks.get(replica.rtype)
        if kept is None or kept[0] is not settings or kept[1] != job_name:
            kept = self._marks[replica.rtype] = (settings, job_name, gang_marks(replica, job_name, settings))
        return kept[2]

    def tf_config(self, rtype: str, index: int) -> str | None:
        """Equal to ``tfjob.tfconfig.tf_config(facts, rtype, index, cluster_domain=...)``."""
        halves = self._halves
        if halves is None:
            return tf_config(self.facts, rtype, index, cluster_domain=self._cluster_domain)
        if halves is _NOT_DISTRIBUTED:
            return None
        return halves[0] + _task(rtype, index) + halves[1]

    def _split(self) -> tuple[str, str] | None:
        facts = self.facts
        if facts.dynamic_worker:
            return None
        rtype, index = (facts.replica_types[0].rtype, 0) if facts.replica_types else ("", 0)
        reference = tf_config(facts, rtype, index, cluster_domain=self._cluster_domain)
        if reference is None:
            return _NOT_DISTRIBUTED
        marker = f'"task":{_task(rtype, index)}'
        if reference.count(marker) != 1:
            return None
        head, tail = reference.split(marker)
        return head + '"task":', tail


class MutationMemo:
    def __init__(
        self,
        *,
        cluster_domain: str = "",
        capacity: int = DEFAULT_CAPACITY,
        max_decisions: int = DEFAULT_MAX_DECISIONS,
    ) -> None:
        self._cluster_domain = cluster_domain
        self._max_decisions = max_decisions
        self._decisions = 0
        self._jobs = VersionMemo(self._derive, capacity, on_keep=self._keep, on_evict=self._forget)

    def job(self, job: TFJob) -> JobMutations:
        return self._jobs.get(job)

    def remember(self, mutations: JobMutations, key: DecisionKey, decision: Decision) -> Decision:
        """Keep ``decision`` with its patch encoded once; what to answer with."""
        if decision.patch and not decision.encoded_patch:
            decision = dataclasses.replace(decision, encoded_patch=encode_patch(decision.patch))
        if not mutations.kept:
            return decision
        if key not in mutations.decisions:
            self._decisions += 1
        mutations.decisions[key] = decision
        while self._decisions > self._max_decisions and len(self._jobs) > 1:
            self._jobs.evict_oldest()
        return decision

    def __len__(self) -> int:
        """Job versions kept."""
        return len(self._jobs)

    @property
    def decisions(self) -> int:
        """Decisions kept, over all job versions."""
        return self._decisions

    def _derive(self, job: TFJob) -> JobMutations:
        return JobMutations(job, self._cluster_domain)

    @staticmethod
    def _keep(mutations: JobMutations) -> None:
        mutations.kept = True

    def _forget(self, mutations: JobMutations) -> None:
        mutations.kept = False  # a request still holding it adds nothing more
        self._decisions -= len(mutations.decisions)
