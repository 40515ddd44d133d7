"""Names the TFJob API and its ecosystem agree on: group/version, labels, annotations, reasons.

Every string here is upstream's (Kubeflow training-operator v1.9, Volcano v1beta1), so that
scripts and dashboards that grep them keep working.
"""

from __future__ import annotations

from typing import Final

# --- the TFJob API -------------------------------------------------------------------------------
GROUP: Final = "kubeflow.org"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "TFJob"
PLURAL: Final = "tfjobs"
SINGULAR: Final = "tfjob"
FRAMEWORK: Final = "tensorflow"

CONTAINER_NAME: Final = "tensorflow"
PORT_NAME: Final = "tfjob-port"
DEFAULT_PORT: Final = 2222
TF_CONFIG_ENV: Final = "TF_CONFIG"
TF_CONFIG_ENVIRONMENT: Final = "cloud"

# --- replica types -------------------------------------------------------------------------------
PS: Final = "PS"
WORKER: Final = "Worker"
CHIEF: Final = "Chief"
MASTER: Final = "Master"
EVALUATOR: Final = "Evaluator"
# The order defaulting normalises keys in (upstream v1.9).
NORMALISE_ORDER: Final = (PS, WORKER, CHIEF, MASTER, EVALUATOR)
# The order the status decision walks the types in (upstream v1.9).
STATUS_ORDER: Final = (CHIEF, EVALUATOR, MASTER, PS, WORKER)
# The tie-break order for PodGroup minResources (D11).
MIN_RESOURCES_ORDER: Final = (CHIEF, MASTER, PS, WORKER, EVALUATOR)
KNOWN_TYPES: Final = frozenset(NORMALISE_ORDER)

# --- replica restart policies ----------------------------------------------------------------------
RESTART_ALWAYS: Final = "Always"
RESTART_ON_FAILURE: Final = "OnFailure"
RESTART_NEVER: Final = "Never"
RESTART_EXIT_CODE: Final = "ExitCode"
RESTART_POLICIES: Final = (RESTART_ALWAYS, RESTART_ON_FAILURE, RESTART_NEVER, RESTART_EXIT_CODE)
DEFAULT_RESTART_POLICY: Final = RESTART_NEVER

# --- run policy ----------------------------------------------------------------------------------
CLEAN_POD_POLICY_NONE: Final = "None"
CLEAN_POD_POLICY_RUNNING: Final = "Running"
CLEAN_POD_POLICY_ALL: Final = "All"
CLEAN_POD_POLICIES: Final = (CLEAN_POD_POLICY_NONE, CLEAN_POD_POLICY_RUNNING, CLEAN_POD_POLICY_ALL)
SUCCESS_POLICY_DEFAULT: Final = ""
SUCCESS_POLICY_ALL_WORKERS: Final = "AllWorkers"
SUCCESS_POLICIES: Final = (SUCCESS_POLICY_DEFAULT, SUCCESS_POLICY_ALL_WORKERS)
MANAGED_BY_TRAINING_OPERATOR: Final = "kubeflow.org/training-operator"
MANAGED_BY_MULTIKUEUE: Final = "kueue.x-k8s.io/multikueue"
MANAGED_BY_VALUES: Final = (MANAGED_BY_TRAINING_OPERATOR, MANAGED_BY_MULTIKUEUE)

# --- labels, annotations, controller identity ----------------------------------------------------
CONTROLLER_NAME: Final = "tfjob-controller"
LABEL_OPERATOR_NAME: Final = "training.kubeflow.org/operator-name"
LABEL_JOB_NAME: Final = "training.kubeflow.org/job-name"
LABEL_REPLICA_TYPE: Final = "training.kubeflow.org/replica-type"
LABEL_REPLICA_INDEX: Final = "training.kubeflow.org/replica-index"
LABEL_JOB_ROLE: Final = "training.kubeflow.org/job-role"
JOB_ROLE_MASTER: Final = "master"

ANNOTATION_GROUP_NAME: Final = "scheduling.k8s.io/group-name"
ANNOTATION_TASK_SPEC: Final = "volcano.sh/task-spec"
VOLCANO_SCHEDULER_NAME: Final = "volcano"
LABEL_SCHEDULER_PLUGINS_POD_GROUP: Final = "scheduling.x-k8s.io/pod-group"

# tfgang's own annotation on a TFJob (docs/behaviour.md, "Disruptions"): "true" restarts the whole
# gang when one of its pods is disrupted, "false" replaces only the disrupted replica; unset, a job
# without PS (its workers form one collective) restarts as a gang.
ANNOTATION_GANG_RESTART: Final = "tfgang.io/gang-restart"
# tfgang's own annotation on a TFJob (docs/behaviour.md, "Network topology"): a JSON object
# {"mode": "hard"|"soft", "highestTierAllowed": <int>} or, by a HyperNode tier's name,
# {"mode": ..., "highestTierName": <name>}, that becomes the PodGroup's spec.networkTopology, so
# Volcano places the gang within one HyperNode of that tier.
ANNOTATION_NETWORK_TOPOLOGY: Final = "tfgang.io/network-topology"
NETWORK_TOPOLOGY_MODES: Final = ("hard", "soft")
NETWORK_TOPOLOGY_FIELDS: Final = ("mode", "highestTierAllowed", "highestTierName")
# Volcano's CRD bounds a tier name; it refuses both limits at once.
MAX_TIER_NAME_LENGTH: Final = 253
# Kubernetes' pod condition for a pod about to end because of a disruption (preemption, eviction
# through the API, node shutdown or loss), and the reason tfgang gives a pod deleted by someone else.
POD_CONDITION_DISRUPTION_TARGET: Final = "DisruptionTarget"
REASON_POD_DELETED: Final = "PodDeleted"

# --- Volcano PodGroup ----------------------------------------------------------------------------
PODGROUP_GROUP: Final = "scheduling.volcano.sh"
PODGROUP_VERSION: Final = "v1beta1"
PODGROUP_API_VERSION: Final = f"{PODGROUP_GROUP}/{PODGROUP_VERSION}"
PODGROUP_KIND: Final = "PodGroup"
PODGROUP_PLURAL: Final = "podgroups"
DEFAULT_QUEUE: Final = "default"
# Its phases, and those in which pods may be created (upstream v1.9), are kubeobjects.volcano's.

# --- conditions ----------------------------------------------------------------------------------
COND_CREATED: Final = "Created"
COND_RUNNING: Final = "Running"
COND_RESTARTING: Final = "Restarting"
COND_SUCCEEDED: Final = "Succeeded"
COND_SUSPENDED: Final = "Suspended"
COND_FAILED: Final = "Failed"

REASON_CREATED: Final = "TFJobCreated"
REASON_RUNNING: Final = "TFJobRunning"
REASON_RESTARTING: Final = "TFJobRestarting"
REASON_SUCCEEDED: Final = "TFJobSucceeded"
REASON_FAILED: Final = "TFJobFailed"
REASON_SUSPENDED: Final = "TFJobSuspended"
REASON_RESUMED: Final = "TFJobResumed"
# tfgang's own (D14): the gang was not admitted within schedulingPolicy.scheduleTimeoutSeconds.
REASON_SCHEDULE_TIMEOUT: Final = "TFJobScheduleTimeout"
# tfgang's own: a pod came back from its create without the mutating webhook's marks and was
# deleted (the Created condition's reason and a Warning event; controller.admission).
REASON_ADMISSION_WEBHOOK_MISSING: Final = "AdmissionWebhookMissing"

# --- event reasons (upstream v1.9) --------------------------------------------------------------
EVENT_SUCCESSFUL_CREATE_POD: Final = "SuccessfulCreatePod"
EVENT_FAILED_CREATE_POD: Final = "FailedCreatePod"
EVENT_SUCCESSFUL_DELETE_POD: Final = "SuccessfulDeletePod"
EVENT_FAILED_DELETE_POD: Final = "FailedDeletePod"
EVENT_SUCCESSFUL_CREATE_SERVICE: Final = "SuccessfulCreateService"
EVENT_FAILED_CREATE_SERVICE: Final = "FailedCreateService"
EVENT_SUCCESSFUL_DELETE_SERVICE: Final = "SuccessfulDeleteService"
EVENT_FAILED_DELETE_SERVICE: Final = "FailedDeleteService"
EVENT_EXITED_WITH_CODE: Final = "ExitedWithCode"
EVENT_JOB_TERMINATED: Final = "JobTerminated"
EVENT_SUCCESSFUL_DELETE_PODGROUP: Final = "SuccessfulDeletePodGroup"
EVENT_FAILED_DELETE_PODGROUP: Final = "FailedDeletePodGroup"
EVENT_SUCCESSFUL_DELETE_JOB: Final = "SuccessfulDeleteJob"
EVENT_FAILED_DELETE_JOB: Final = "FailedDeleteJob"
EVENT_SET_POD_TEMPLATE_RESTART_POLICY: Final = "SetPodTemplateRestartPolicy"
EVENT_SET_POD_TEMPLATE_SCHEDULER_NAME: Final = "SetPodTemplateSchedulerName"
# tfgang's: why a job has not started (Volcano's vcjob reports a waiting gang as PodGroupPending).
EVENT_PODGROUP_PENDING: Final = "PodGroupPending"

# The ExitCode policy's sentinel for "the tensorflow container never terminated" (upstream v1.9).
EXIT_CODE_UNKNOWN: Final = 0xBEEF
