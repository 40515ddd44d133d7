"""POST ``pods/<name>/eviction``: a graceful deletion that honours the pod's PodDisruptionBudget.

As kube-apiserver does: a pod that is not running (Pending, Succeeded, Failed) or already being
deleted is evicted without looking at budgets; otherwise the one PodDisruptionBudget whose selector
matches it must allow a disruption (its status, written by the disruption controller, is then
decremented and the pod listed under ``disruptedPods``), else the answer is 429 with the budget's
reason. An evicted pod first gets the ``DisruptionTarget`` condition (``EvictionByEvictionAPI``),
then is deleted with the Eviction's ``deleteOptions`` (the pod's own grace period by default), so
its node stops it as it stops any deleted pod.
"""

from __future__ import annotations

import copy
from typing import Any

from sandbox.apiserver import errors
from sandbox.apiserver.gc import Deleter, parse_delete_options
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.operations import RequestContext
from sandbox.apiserver.registry import PODS, ResourceInfo, StorageKey
from sandbox.apiserver.selectors import match_label_selector_object
from sandbox.apiserver.state import ApiState, timestamp

PDBS = StorageKey("policy", "poddisruptionbudgets")
DISRUPTION_CAUSE = "DisruptionBudget"
TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."


async def evict_pod(
    state: ApiState,
    deleter: Deleter,
    pods: ResourceInfo,
    namespace: str,
    name: str,
    body: Any,
    ctx: RequestContext,
) -> JsonObj:
    eviction = body if isinstance(body, dict) else {}
    if str((eviction.get("metadata") or {}).get("name") or "") != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = parse_delete_options(eviction.get("deleteOptions"), {})
    pod = state.storage.get(PODS, namespace, name)
    if pod is None:
        raise errors.not_found("pods", "", name)
    if not _budget_ignored(pod):
        _take_disruption(state, pod, namespace, ctx.dry_run)
    if not ctx.dry_run:
        _mark_disruption_target(state, pod)
        await deleter.delete(pods, namespace, name, options, ctx)
    return errors.success_body()


def _budget_ignored(pod: JsonObj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Pending", "Succeeded", "Failed") or bool(pod["metadata"].get("deletionTimestamp"))


def _ready(pod: JsonObj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def _take_disruption(state: ApiState, pod: JsonObj, namespace: str, dry_run: bool) -> None:
    labels = pod["metadata"].get("labels") or {}
    budgets = [
        pdb
        for pdb in state.storage.list_in(PDBS, namespace)
        if match_label_selector_object((pdb.get("spec") or {}).get("selector"), labels)
    ]
    if len(budgets) > 1:
        several = "This pod has more than one PodDisruptionBudget"
        raise errors.ApiError(500, "", f"{several}, which the eviction subresource does not support.")
    if not budgets:
        return
    pdb = budgets[0]
    pdb_name = str(pdb["metadata"]["name"])
    status = pdb.get("status") or {}
    if not _ready(pod):
        policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy")
        desired = int(status.get("desiredHealthy") or 0)
        if policy == "AlwaysAllow" or (int(status.get("currentHealthy") or 0) >= desired > 0):
            return
    if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 1):
        raise _too_many(f"The disruption budget {pdb_name} is still being processed by the server.", 10)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        problem = "pdb disruptions allowed is negative"
        error = errors.forbidden("poddisruptionbudgets", "policy", pdb_name, problem)
        why = f"The disruption budget {pdb_name} does not allow evicting pods currently: {problem}"
        error.details = {**(error.details or {}), "causes": [{"reason": DISRUPTION_CAUSE, "message": why}]}
        raise error
    if allowed == 0:
        current, desired = int(status.get("currentHealthy") or 0), int(status.get("desiredHealthy") or 0)
        if current <= desired:
            why = f"The disruption budget {pdb_name} needs {desired} healthy pods and has {current} currently"
        else:
            why = f"The disruption budget {pdb_name} does not allow evicting pods currently"
        raise _too_many(why, 0)
    if dry_run:
        return
    updated = copy.deepcopy(pdb)
    new_status = updated.setdefault("status", {})
    new_status["disruptionsAllowed"] = allowed - 1
    disrupted = new_status.setdefault("disruptedPods", {}) or {}
    disrupted[str(pod["metadata"]["name"])] = timestamp(state.now())
    new_status["disruptedPods"] = disrupted
    state.storage.put(PDBS, updated, "MODIFIED")


def _too_many(cause: str, retry_after: int) -> errors.ApiError:
    details: JsonObj = {"causes": [{"reason": DISRUPTION_CAUSE, "message": cause}]}
    headers = {}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
        headers["Retry-After"] = str(retry_after)
    return errors.ApiError(429, "TooManyRequests", TOO_MANY, details, headers)


def _mark_disruption_target(state: ApiState, pod: JsonObj) -> None:
    updated = copy.deepcopy(pod)
    status = updated.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or () if c.get("type") != "DisruptionTarget"]
    conditions.append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": timestamp(state.now()),
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
        }
    )
    status["conditions"] = conditions
    state.storage.put(PODS, updated, "MODIFIED")
