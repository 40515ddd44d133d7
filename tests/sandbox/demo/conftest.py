"""The shared seed-fidelity checks live outside test modules; let pytest explain their failures."""

import pytest

from sandbox.backends import KUBE_APISERVER

pytest.register_assert_rewrite("tests.sandbox.demo.fidelity_checks")


# What the shortened replay shows differently on kube-apiserver v1.20, by test and experiment.
V1_20_PRINTS_OTHERWISE = {
    ("test_pod_states_are_the_transcripts", "worker-failure"): (
        "the pod STATUS of newer releases: v1.20's table printer shows Terminating for every pod "
        "with a deletionTimestamp, where the transcript's cluster shows a deleted pod whose "
        "containers ended as Completed/Error"
    ),
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or callspec.params.get("replays") != KUBE_APISERVER:
            continue
        name = getattr(item, "originalname", item.name)
        reason = V1_20_PRINTS_OTHERWISE.get((name, callspec.params.get("experiment")))
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=f"kube-apiserver v1.20 lacks {reason}", strict=True))
