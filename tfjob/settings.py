"""Operator-wide settings the domain needs: which gang scheduler, which cluster domain."""

from __future__ import annotations

from dataclasses import dataclass

from tfjob.constants import VOLCANO_SCHEDULER_NAME


@dataclass(frozen=True)
class Settings:
    # "volcano" (any case) -> Volcano PodGroups; another non-empty name -> scheduler-plugins
    # PodGroups with that scheduler name; "" -> gang scheduling off (reference §6.1).
    gang_scheduler_name: str = VOLCANO_SCHEDULER_NAME
    # Appended after ".svc" in TF_CONFIG addresses when set (upstream's CUSTOM_CLUSTER_DOMAIN).
    cluster_domain: str = ""

    @property
    def gang_enabled(self) -> bool:
        return self.gang_scheduler_name.strip().lower() not in ("", "none")

    @property
    def volcano(self) -> bool:
        return self.gang_scheduler_name.strip().lower() == VOLCANO_SCHEDULER_NAME
