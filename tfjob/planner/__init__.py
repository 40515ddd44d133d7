"""The reconcile planner: a pure function from one job's observed state to its new status and
the actions that bring the cluster towards it (see ``tfjob.planner.plan``)."""

from kubeobjects.times import format_time, parse_time
from tfjob.planner.actions import (
    NORMAL,
    WARNING,
    Action,
    CreatePod,
    CreatePodGroup,
    CreateService,
    DeleteJob,
    DeletePod,
    DeletePodGroup,
    DeleteService,
    Event,
    PatchPodGroup,
)
from tfjob.planner.conditions import last_condition_type
from tfjob.planner.draft import (
    COUNTER_CREATED,
    COUNTER_DELETED,
    COUNTER_FAILED,
    COUNTER_FAILED_PODS,
    COUNTER_RESTARTED,
    COUNTER_SUCCESSFUL,
    Plan,
)
from tfjob.planner.exitcodes import is_retryable_exit_code
from tfjob.planner.observed import Observed
from tfjob.planner.plan import managed_here, plan
from tfjob.planner.progress import Progress, progress

__all__ = [
    "COUNTER_CREATED",
    "COUNTER_DELETED",
    "COUNTER_FAILED",
    "COUNTER_FAILED_PODS",
    "COUNTER_RESTARTED",
    "COUNTER_SUCCESSFUL",
    "NORMAL",
    "WARNING",
    "Action",
    "CreatePod",
    "CreatePodGroup",
    "CreateService",
    "DeleteJob",
    "DeletePod",
    "DeletePodGroup",
    "DeleteService",
    "Event",
    "Observed",
    "PatchPodGroup",
    "Plan",
    "Progress",
    "format_time",
    "is_retryable_exit_code",
    "last_condition_type",
    "managed_here",
    "parse_time",
    "plan",
    "progress",
]
