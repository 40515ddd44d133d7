"""Whole pod decisions remembered per job version, replica and pod shape: the patch of every pod of
one replica is the same, so its operations, their JSON and its base64 are made once and reused.

A gang's pods arrive together and a controller builds them all from the same template, so after
the first pod of a replica the webhook answers with the stored decision, base64 included. The key
holds everything ``mutate_pod`` reads to build a patch: the job's uid and resourceVersion (hence
its TF_CONFIG and gang marks), the replica type and index, and the pod's shape -- where its
``tensorflow`` container is, whether it has an ``env`` list, which of the wanted annotations and
labels it already carries, and whether its schedulerName is already the gang scheduler's. Pods
that already set TF_CONFIG (rare, and answered with a warning) are never remembered. The memory
is a bounded LRU, whatever the number of jobs.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Hashable

from webhook.review import Decision, encode_patch

# Replicas whose pods are being admitted right now: like the TF_CONFIG memo, bounded.
DEFAULT_CAPACITY = 4096

PatchKey = tuple[Hashable, ...]


class PatchMemo:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._decisions: OrderedDict[PatchKey, Decision] = OrderedDict()

    def get(self, key: PatchKey) -> Decision | None:
        decision = self._decisions.get(key)
        if decision is not None:
            self._decisions.move_to_end(key)
        return decision

    def put(self, key: PatchKey, decision: Decision) -> Decision:
        """Remember ``decision`` with its patch encoded once; what to answer with."""
        if decision.patch and not decision.encoded_patch:
            decision = dataclasses.replace(decision, encoded_patch=encode_patch(decision.patch))
        self._decisions[key] = decision
        if len(self._decisions) > self._capacity:
            self._decisions.popitem(last=False)
        return decision

    def __len__(self) -> int:
        return len(self._decisions)
