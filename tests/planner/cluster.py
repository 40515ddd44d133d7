"""A tiny in-memory world for multi-pass planner tests: it carries actions out the way the
controller and the API server would (create, delete, patch), counts status writes, and lets the
test move pods and the PodGroup through the states the kubelet and Volcano would give them.

It is not a mock of any API: it holds plain objects and applies the planner's own actions.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from kubeobjects.times import format_time
from tfjob.facts import read_facts
from tfjob.planner import (
    CreatePod,
    CreatePodGroup,
    CreateService,
    DeleteJob,
    DeletePod,
    DeletePodGroup,
    DeleteService,
    Observed,
    PatchPodGroup,
    Plan,
    last_condition_type,
    plan,
)
from tfjob.settings import Settings
from tfjob.wire import Pod, PodGroup, Service, TFJob

from .builders import T0, VOLCANO, container_status


class DuplicatePodError(AssertionError):
    pass


class Cluster:
    def __init__(self, job: TFJob, settings: Settings = VOLCANO, *, graceful_delete: bool = False) -> None:
        self.job: TFJob | None = copy.deepcopy(job)
        self.settings = settings
        self.graceful_delete = graceful_delete
        self.pods: dict[str, Pod] = {}
        self.services: dict[str, Service] = {}
        self.podgroup: PodGroup | None = None
        self.now: datetime = T0
        self.status_writes = 0
        self.states: list[str] = [""]
        self.plans: list[Plan] = []
        self._uids = 0

    # --- the planner ----------------------------------------------------------------------------
    def reconcile(self, now: datetime | None = None) -> Plan:
        assert self.job is not None, "the job was deleted"
        if now is not None:
            self.now = now
        # The controller hands the planner facts it keeps for later passes (``FactsMemo``): every
        # pass here checks that planning leaves them as they were.
        facts = read_facts(self.job)
        unchanged = copy.deepcopy(facts)
        observed = Observed(
            self.job, list(self.pods.values()), list(self.services.values()), self.podgroup, facts=facts
        )
        result = plan(observed, self.now, self.settings)
        assert facts == unchanged, "the planner changed the facts it was given"
        self.plans.append(result)
        if result.status != (self.job.get("status") or {}):
            self.status_writes += 1
            self.job["status"] = copy.deepcopy(result.status)
            state = last_condition_type(result.status.get("conditions", []))
            if state != self.states[-1]:
                self.states.append(state)
        for action in result.actions:
            self._apply(action)
        return result

    def _apply(self, action: Any) -> None:
        if isinstance(action, CreatePod):
            name = action.name
            if name in self.pods:
                raise DuplicatePodError(f"a second pod named {name}")
            created = copy.deepcopy(action.pod)
            self._uids += 1
            created["metadata"]["uid"] = f"pod-uid-{self._uids}"
            created["metadata"]["creationTimestamp"] = format_time(self.now)
            created["status"] = {"phase": "Pending"}
            self.pods[name] = created
        elif isinstance(action, DeletePod):
            found = self.pods.get(action.name)
            assert found is not None and found["metadata"]["uid"] == action.uid, action
            if self.graceful_delete:
                found["metadata"]["deletionTimestamp"] = format_time(self.now)
            else:
                del self.pods[action.name]
        elif isinstance(action, CreateService):
            assert action.name not in self.services
            self.services[action.name] = copy.deepcopy(action.service)
        elif isinstance(action, DeleteService):
            del self.services[action.name]
        elif isinstance(action, CreatePodGroup):
            assert self.podgroup is None
            self.podgroup = copy.deepcopy(action.podgroup)
            self.podgroup["metadata"]["creationTimestamp"] = format_time(self.now)
        elif isinstance(action, PatchPodGroup):
            assert self.podgroup is not None
            self.podgroup["spec"].update(action.patch.get("spec", {}))
        elif isinstance(action, DeletePodGroup):
            assert self.podgroup is not None
            self.podgroup = None
        elif isinstance(action, DeleteJob):
            self.job = None
        else:  # pragma: no cover - every action type is handled above
            raise AssertionError(f"unknown action {action!r}")

    # --- the kubelet and Volcano ------------------------------------------------------------------
    def set_podgroup_phase(self, phase: str) -> None:
        assert self.podgroup is not None
        self.podgroup["status"] = {"phase": phase}

    def set_pod(
        self,
        name: str,
        phase: str,
        *,
        exit_code: int | None = None,
        waiting: str | None = None,
        restarts: int = 0,
    ) -> None:
        found = self.pods[name]
        state = container_status(
            running=phase == "Running" and exit_code is None and waiting is None,
            exit_code=exit_code,
            waiting=waiting,
            restarts=restarts,
        )
        found["status"] = {"phase": phase, "containerStatuses": [state]}

    def set_replicas(self, rtype: str, replicas: int) -> None:
        assert self.job is not None
        specs: Any = self.job["spec"]["tfReplicaSpecs"]
        specs[rtype]["replicas"] = replicas

    def finish_deletions(self) -> None:
        for name in [name for name, found in self.pods.items() if found["metadata"].get("deletionTimestamp")]:
            del self.pods[name]

    @property
    def conditions(self) -> list[tuple[str, str]]:
        assert self.job is not None
        conditions = self.job.get("status", {}).get("conditions", [])
        return [(c.get("type", ""), c.get("status", "")) for c in conditions]
