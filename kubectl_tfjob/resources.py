"""The resources the plugin reads: TFJobs and the PodGroup kind the operator's gang scheduler uses."""

from __future__ import annotations

from kube.resources import PODGROUPS_V1BETA1, Resource
from tfjob.constants import GROUP, KIND, PLURAL, VERSION
from tfjob.settings import Settings

TFJOBS = Resource(GROUP, VERSION, PLURAL, KIND)
SCHEDULER_PLUGINS_PODGROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")


def podgroup_resource(settings: Settings) -> Resource:
    return PODGROUPS_V1BETA1 if settings.volcano else SCHEDULER_PLUGINS_PODGROUPS
