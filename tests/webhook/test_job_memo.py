"""What ``webhook.job_memo`` keeps per job version answers exactly as a fresh computation would:
TF_CONFIG for every replica of every fixture job; whole decisions for every fixture, served again
from the memory, and for pods of one replica in every shape the key tells apart, in any order."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import jsonpatch
import pytest

from tests.webhook.admission_cases import AdmissionCase, decoded_envelope, load_cases
from tfjob.facts import read_facts
from tfjob.tfconfig import tf_config
from webhook.admission import admit_pod
from webhook.cache import StaticJobs
from webhook.job_memo import MutationMemo
from webhook.review import build_response, parse_review

JOBS: dict[str, Any] = {job["metadata"]["name"]: job for case in load_cases() for job in case.tfjobs}
MUTATIONS = [case for case in load_cases() if case.endpoint == "/mutate-pods"]
PATCHING = [case for case in MUTATIONS if case.expected["patch"]]


def _memo(case: AdmissionCase) -> MutationMemo:
    return MutationMemo(cluster_domain=case.settings.cluster_domain)


async def _answer(case: AdmissionCase, review: dict[str, Any], memo: MutationMemo | None) -> dict[str, Any]:
    """The answer made with ``memo``, or (None) with a memory of its own for this call alone."""
    request = parse_review(review)
    decision = await admit_pod(request, StaticJobs(case.tfjobs), case.settings, memo)
    return decoded_envelope(dict(build_response(request, decision)))


def _dynamic(job: dict[str, Any]) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["spec"]["enableDynamicWorker"] = True
    job["metadata"]["name"] += "-dyn"
    return job


ALL_JOBS = list(JOBS.values()) + [_dynamic(job) for job in JOBS.values()]


@pytest.mark.parametrize("domain", ["", "cluster.local"])
@pytest.mark.parametrize("job", ALL_JOBS, ids=[job["metadata"]["name"] for job in ALL_JOBS])
def test_tf_config_from_the_memory_equals_tf_config_for_every_replica(job: Any, domain: str) -> None:
    memo = MutationMemo(cluster_domain=domain)
    for _ in range(2):  # the second round is served from the memory
        for rtype, spec in job["spec"]["tfReplicaSpecs"].items():
            for index in range(spec.get("replicas", 1)):
                assert memo.job(job).tf_config(rtype, index) == tf_config(
                    read_facts(job), rtype, index, cluster_domain=domain
                )
    assert len(memo) == 1


def test_a_new_resource_version_is_computed_again_and_capacity_bounds_the_memo() -> None:
    memo = MutationMemo(capacity=2)
    job: Any = copy.deepcopy(JOBS["tftest"])
    before = memo.job(job).tf_config("Worker", 0)
    job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 4
    job["metadata"]["resourceVersion"] = "2002"
    after = memo.job(job).tf_config("Worker", 0)
    assert before != after and "tftest-worker-3" in (after or "")
    memo.job(JOBS["ce"])
    assert len(memo) == 2


def test_a_job_without_resource_version_is_never_kept() -> None:
    memo = MutationMemo()
    job: Any = copy.deepcopy(JOBS["tftest"])
    del job["metadata"]["resourceVersion"]
    assert memo.job(job) is not memo.job(job)
    assert len(memo) == 0


@pytest.mark.parametrize("case", MUTATIONS, ids=[case.name for case in MUTATIONS])
async def test_every_fixture_is_answered_the_same_from_the_memory(case: AdmissionCase) -> None:
    memo = _memo(case)
    for _ in range(3):  # the first answer is made, the others remembered
        assert await _answer(case, case.review, memo) == case.expected_envelope()


@pytest.mark.parametrize("case", PATCHING, ids=[case.name for case in PATCHING])
async def test_a_patched_pod_under_the_same_memory_needs_nothing_more(case: AdmissionCase) -> None:
    memo = _memo(case)
    await _answer(case, case.review, memo)
    again = copy.deepcopy(case.review)
    pod = case.review["request"]["object"]
    again["request"]["object"] = jsonpatch.apply_patch(pod, case.expected["patch"])
    assert await _answer(case, again, memo) == await _answer(case, again, None)
    assert "patch" not in (await _answer(case, again, memo))["response"]


def _shapes(review: dict[str, Any]) -> list[dict[str, Any]]:
    """The same pod in the shapes the memory's key tells apart."""
    pod = review["request"]["object"]
    tensorflow = next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")

    def variant(change: Any) -> dict[str, Any]:
        changed = copy.deepcopy(review)
        change(changed["request"]["object"])
        return changed

    def no_annotations(p: dict[str, Any]) -> None:
        p["metadata"].pop("annotations", None)

    def group_annotated(p: dict[str, Any]) -> None:
        p["metadata"].setdefault("annotations", {})["scheduling.k8s.io/group-name"] = p["metadata"]["labels"][
            "training.kubeflow.org/job-name"
        ]

    def volcano_scheduled(p: dict[str, Any]) -> None:
        p["spec"]["schedulerName"] = "volcano"

    def no_env(p: dict[str, Any]) -> None:
        next(c for c in p["spec"]["containers"] if c["name"] == "tensorflow").pop("env", None)

    def sidecar_first(p: dict[str, Any]) -> None:
        p["spec"]["containers"].insert(0, {"name": "sidecar", "image": "busybox"})

    def own_tf_config(p: dict[str, Any]) -> None:
        container = next(c for c in p["spec"]["containers"] if c["name"] == "tensorflow")
        container.setdefault("env", []).append({"name": "TF_CONFIG", "value": "{}"})

    assert tensorflow is not None
    changes = (no_annotations, group_annotated, volcano_scheduled, no_env, sidecar_first, own_tf_config)
    return [copy.deepcopy(review)] + [variant(change) for change in changes]


async def test_every_shape_of_one_replica_gets_its_own_answer_in_any_order() -> None:
    case = PATCHING[0]
    shapes = _shapes(case.review)
    fresh = [await _answer(case, shape, None) for shape in shapes]
    assert len({repr(answer) for answer in fresh}) >= 5  # the shapes really differ in their answers
    for order in itertools.islice(itertools.permutations(range(len(shapes))), 0, 5040, 97):
        memo = _memo(case)
        for _ in range(2):
            for position in order:
                assert await _answer(case, shapes[position], memo) == fresh[position]


async def test_decisions_are_bounded_over_all_jobs_and_a_patch_is_encoded_once() -> None:
    case = PATCHING[0]
    memo = MutationMemo(cluster_domain=case.settings.cluster_domain, max_decisions=3)
    job = case.tfjobs[0]
    first = await admit_pod(parse_review(case.review), StaticJobs(case.tfjobs), case.settings, memo)
    assert first.encoded_patch
    again = await admit_pod(parse_review(case.review), StaticJobs(case.tfjobs), case.settings, memo)
    assert again is first  # remembered, base64 included
    # Other versions of the job, each with a decision: the oldest versions go to keep three.
    for version in range(2, 8):
        other = copy.deepcopy(job)
        other["metadata"]["resourceVersion"] = str(version)
        await admit_pod(parse_review(case.review), StaticJobs([other]), case.settings, memo)
        assert memo.decisions <= 3
    assert memo.decisions == 3 and len(memo) == 3
