"""The two admission decisions, from a parsed review to a ``Decision`` (the I/O is the job lookup)."""

from __future__ import annotations

import logging

from tfjob.settings import Settings
from webhook.cache import JobLookup, JobLookupFailed
from webhook.job_memo import MutationMemo
from webhook.mutate_pod import mutate_pod, pod_target
from webhook.review import AdmissionRequest, Decision, Reason, deny
from webhook.validate_tfjob import validate_tfjob

logger = logging.getLogger(__name__)


async def admit_pod(
    request: AdmissionRequest,
    jobs: JobLookup,
    settings: Settings,
    memo: MutationMemo | None = None,
) -> Decision:
    target = pod_target(request)
    if isinstance(target, Decision):
        return target
    try:
        job = await jobs.get(target.namespace, target.job_name)
    except JobLookupFailed as exc:
        logger.warning("%s", exc)
        # 503: the controller retries the pod creation later, when the API is reachable again.
        return deny(Reason.LOOKUP_FAILED, 503, str(exc))
    return mutate_pod(target, job, settings, memo)


async def admit_tfjob(request: AdmissionRequest) -> Decision:
    return validate_tfjob(request)
