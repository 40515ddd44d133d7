"""Every recorded-style AdmissionReview fixture gets exactly its expected answer (pure decision path).

The same fixtures go through the real HTTPS server in ``test_webhook_server_tls.py``; here the
decision functions are also checked for properties every answer must have: a mutation patch
applies to the pod it came with, and applying it then re-admitting the result changes nothing.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import jsonpatch
import pytest

from tests.webhook.admission_cases import AdmissionCase, decoded_envelope, load_cases
from tfjob.facts import read_facts
from tfjob.tfconfig import tf_config
from webhook.admission import admit_pod, admit_tfjob
from webhook.cache import StaticJobs, admission_view
from webhook.review import build_response, parse_review

CASES = load_cases()
MUTATIONS = [case for case in CASES if case.endpoint == "/mutate-pods"]
PATCHING = [case for case in MUTATIONS if case.expected["patch"]]


async def _answer(case: AdmissionCase, review: dict[str, Any]) -> dict[str, Any]:
    request = parse_review(review)
    if case.endpoint == "/mutate-pods":
        decision = await admit_pod(request, StaticJobs(case.tfjobs), case.settings)
    else:
        decision = await admit_tfjob(request)
    return decoded_envelope(dict(build_response(request, decision)))


def test_the_fixture_set_covers_both_endpoints() -> None:
    assert len(MUTATIONS) >= 25
    assert len(CASES) - len(MUTATIONS) >= 25


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_fixture_gets_its_expected_envelope(case: AdmissionCase) -> None:
    assert await _answer(case, case.review) == case.expected_envelope()


def test_most_mutation_fixtures_patch() -> None:
    assert len(PATCHING) >= 15


@pytest.mark.parametrize("case", PATCHING, ids=[case.name for case in PATCHING])
async def test_patch_applies_and_reinvocation_is_a_no_op(case: AdmissionCase) -> None:
    pod = case.review["request"]["object"]
    patched = jsonpatch.apply_patch(pod, case.expected["patch"])
    assert patched != pod
    again = copy.deepcopy(case.review)
    again["request"]["object"] = patched
    response = (await _answer(case, again))["response"]
    assert "patch" not in response and response["allowed"]


@pytest.mark.parametrize("case", MUTATIONS, ids=[case.name for case in MUTATIONS])
def test_cached_view_gives_the_same_tf_config_as_the_full_job(case: AdmissionCase) -> None:
    job: Any
    for job in case.tfjobs:
        view: Any = admission_view(job)
        for rtype, spec in job["spec"]["tfReplicaSpecs"].items():
            for index in range(spec.get("replicas", 1)):
                assert tf_config(read_facts(view), rtype, index) == tf_config(read_facts(job), rtype, index)


async def test_the_pod_namespace_comes_from_the_request() -> None:
    case = next(case for case in CASES if case.name == "mutate-seed-ps-0")
    review = copy.deepcopy(case.review)
    review["request"]["namespace"] = "elsewhere"
    response = (await _answer(case, review))["response"]
    assert not response["allowed"]
    assert response["status"]["message"].startswith("TFJob elsewhere/tftest ")


async def test_settings_change_the_answer() -> None:
    case = next(case for case in CASES if case.name == "mutate-seed-ps-0")
    off = dataclasses.replace(case, settings=dataclasses.replace(case.settings, gang_scheduler_name=""))
    response = (await _answer(off, case.review))["response"]
    assert [op["path"] for op in response["patch"]] == ["/spec/containers/0/env"]
