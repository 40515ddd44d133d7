"""Operator-wide settings the domain needs: which gang scheduler, which cluster domain, how long a
reason to wait must hold before a job reports it."""

from __future__ import annotations

from dataclasses import dataclass

from tfjob.constants import VOLCANO_SCHEDULER_NAME


@dataclass(frozen=True)
class Settings:
    # "volcano" (any case) -> Volcano PodGroups; another non-empty name -> scheduler-plugins
    # PodGroups with that scheduler name; "" -> gang scheduling off (upstream v1.9).
    gang_scheduler_name: str = VOLCANO_SCHEDULER_NAME
    # Appended after ".svc" in TF_CONFIG addresses when set (upstream's CUSTOM_CLUSTER_DOMAIN).
    cluster_domain: str = ""
    # Seconds a reason for a job not starting (an unschedulable gang, a full queue) must hold
    # before the job reports it, so the second between admission and binding is not reported.
    pending_reason_grace_seconds: float = 10.0

    @property
    def gang_enabled(self) -> bool:
        return self.gang_scheduler_name.strip().lower() not in ("", "none")

    @property
    def volcano(self) -> bool:
        return self.gang_scheduler_name.strip().lower() == VOLCANO_SCHEDULER_NAME
