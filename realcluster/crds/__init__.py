"""CRDs the sandbox installs: Volcano's PodGroup, Queue and HyperNode (written from the Volcano
notes and API types), and the location of the chart's TFJob CRD."""

from __future__ import annotations

import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent

PODGROUP_CRD = str(_HERE / "scheduling.volcano.sh_podgroups.yaml")
QUEUE_CRD = str(_HERE / "scheduling.volcano.sh_queues.yaml")
HYPERNODE_CRD = str(_HERE / "topology.volcano.sh_hypernodes.yaml")
VOLCANO_CRD_FILES: tuple[str, ...] = (PODGROUP_CRD, QUEUE_CRD, HYPERNODE_CRD)

TFJOB_CRD_ENV = "TFGANG_TFJOB_CRD"
TFJOB_CRD_RELATIVE = Path("charts") / "tfgang" / "crds" / "kubeflow.org_tfjobs.yaml"


def tfjob_crd_path() -> str | None:
    """The chart's TFJob CRD: ``$TFGANG_TFJOB_CRD``, else looked up from the source tree or the cwd."""
    override = os.environ.get(TFJOB_CRD_ENV)
    if override:
        return override
    for root in (_HERE.parents[1], Path.cwd()):
        candidate = root / TFJOB_CRD_RELATIVE
        if candidate.exists():
            return str(candidate)
    return None
