"""Remembered pod decisions (``webhook.patch_memo``) answer exactly as a fresh decision would: for
every fixture, served again from the memory, and for pods of one replica in every shape the key
tells apart, in any order."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import jsonpatch
import pytest

from tests.webhook.admission_cases import AdmissionCase, decoded_envelope, load_cases
from webhook.admission import admit_pod
from webhook.cache import StaticJobs
from webhook.patch_memo import PatchMemo
from webhook.review import Reason, allow, build_response, parse_review
from webhook.tfconfig_memo import TFConfigMemo

MUTATIONS = [case for case in load_cases() if case.endpoint == "/mutate-pods"]
PATCHING = [case for case in MUTATIONS if case.expected["patch"]]


class _Memories:
    def __init__(self, case: AdmissionCase) -> None:
        self.tf_configs = TFConfigMemo(cluster_domain=case.settings.cluster_domain)
        self.patches = PatchMemo()


async def _answer(case: AdmissionCase, review: dict[str, Any], memories: _Memories | None) -> dict[str, Any]:
    request = parse_review(review)
    jobs = StaticJobs(case.tfjobs)
    if memories is None:
        decision = await admit_pod(request, jobs, case.settings)
    else:
        decision = await admit_pod(request, jobs, case.settings, memories.tf_configs, memories.patches)
    return decoded_envelope(dict(build_response(request, decision)))


@pytest.mark.parametrize("case", MUTATIONS, ids=[case.name for case in MUTATIONS])
async def test_every_fixture_is_answered_the_same_from_the_memory(case: AdmissionCase) -> None:
    memories = _Memories(case)
    for _ in range(3):  # the first answer is made, the others remembered
        assert await _answer(case, case.review, memories) == case.expected_envelope()


@pytest.mark.parametrize("case", PATCHING, ids=[case.name for case in PATCHING])
async def test_a_patched_pod_under_the_same_memory_needs_nothing_more(case: AdmissionCase) -> None:
    memories = _Memories(case)
    await _answer(case, case.review, memories)
    again = copy.deepcopy(case.review)
    pod = case.review["request"]["object"]
    again["request"]["object"] = jsonpatch.apply_patch(pod, case.expected["patch"])
    assert await _answer(case, again, memories) == await _answer(case, again, None)
    assert "patch" not in (await _answer(case, again, memories))["response"]


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
        memories = _Memories(case)
        for _ in range(2):
            for position in order:
                assert await _answer(case, shapes[position], memories) == fresh[position]


def test_the_memory_is_bounded_and_encodes_a_patch_once() -> None:
    memo = PatchMemo(capacity=2)
    operation = {"op": "add", "path": "/spec/schedulerName", "value": "volcano"}
    first = memo.put(("a",), allow(Reason.MUTATED, patch=[operation]))
    assert first.encoded_patch and memo.get(("a",)) is first
    memo.put(("b",), allow(Reason.UNCHANGED))
    memo.put(("c",), allow(Reason.UNCHANGED))
    assert len(memo) == 2 and memo.get(("a",)) is None
