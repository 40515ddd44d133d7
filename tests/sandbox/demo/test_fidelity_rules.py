"""The comparison rules themselves: they accept only the named timing collapses and catch real differences."""

from __future__ import annotations

from pathlib import Path

import yaml

from sandbox.seedreplay import backoff_base_for, seed_dir, shorten_manifest
from tests.sandbox.demo.fidelity import (
    DELETED_BEFORE_PHASE_REPORTED,
    FINISHED_PHASE_REPORTED_LATE,
    KILLED_RIGHT_AFTER_RESTART,
    PODGROUP_SEEN_DURING_TEARDOWN,
    compare_pod,
    compare_podgroup,
    distinct,
    known_finishing_divergence,
    known_pod_divergence,
    known_podgroup_divergence,
    lines_before,
    parse_transcript,
    pod_states,
    podgroup_states,
    teardown_started,
    tfjob_states,
    turning_points,
)

TRANSCRIPT, TF_CONFIG = parse_transcript()


def test_the_transcript_tables_give_the_designs_sequences() -> None:
    assert [tfjob_states(TRANSCRIPT[name].streams["tfjob"]) for name in TRANSCRIPT] == [
        ["", "Created", "Running", "Succeeded"],
        ["", "Created", "Running", "Failed"],
        ["", "Created", "Running", "Succeeded"],
    ]
    for tables in TRANSCRIPT.values():
        assert distinct(s[0] for s in podgroup_states(tables.streams["podgroup"])) == [
            "",
            "Inqueue",
            "Running",
        ]
        assert sorted(pod_states(tables.streams["po"])) == [
            "tftest-ps-0",
            "tftest-worker-0",
            "tftest-worker-1",
            "tftest-worker-2",
        ]
    worker_0 = pod_states(TRANSCRIPT["worker-failure"].streams["po"])["tftest-worker-0"]
    assert [(status, restarts) for status, restarts, _node in worker_0][-4:] == [
        ("CrashLoopBackOff", 1),
        ("Running", 2),
        ("Terminating", 2),
        ("Error", 2),
    ]
    assert TF_CONFIG.startswith('{"cluster":{"ps":["tftest-ps-0.default.svc:2222"]')


def test_turning_points_drop_only_the_steps_of_a_rise_or_fall() -> None:
    assert turning_points([0, 3, 4, 2]) == [0, 4, 2]
    assert turning_points([0, 1, 2, 3, 4, 3, 2, 1]) == [0, 4, 1]
    assert turning_points([0, 4, 1, 4]) == [0, 4, 1, 4]


def test_podgroup_comparison_tolerates_named_collapses_only() -> None:
    expected = [
        ("", 4, 0),
        ("Inqueue", 4, 0),
        ("Running", 4, 0),
        ("Running", 4, 3),
        ("Running", 4, 4),
        ("Running", 4, 2),
    ]
    in_one_step = [("", 4, 0), ("Inqueue", 4, 0), ("Running", 4, 0), ("Running", 4, 4), ("Running", 4, 2)]
    deleted_before_the_fall = [("", 4, 0), ("Inqueue", 4, 0), ("Running", 4, 0), ("Running", 4, 4)]
    assert compare_podgroup(in_one_step, expected) == []
    assert compare_podgroup(deleted_before_the_fall, expected) == []
    assert compare_podgroup([*in_one_step[:-1], ("Running", 4, 1)], expected) != []
    assert compare_podgroup([("", 4, 0), ("Running", 4, 0), ("Running", 4, 4)], expected) != []
    assert compare_podgroup([(s, 3, r) for s, _m, r in in_one_step], expected) != []
    assert compare_podgroup([*in_one_step, ("Running", 4, 4)], expected) != []


def test_pod_comparison_is_exact_except_for_the_ps_the_transcript_stopped_watching() -> None:
    expected = [
        ("Pending", 0, "<none>"),
        ("Pending", 0, "las1"),
        ("Running", 0, "las1"),
        ("Completed", 0, "las1"),
    ]
    restarted = [*expected, ("Running", 1, "las1")]
    assert compare_pod("normal", "tftest-ps-0", restarted, expected) == []
    assert compare_pod("normal", "tftest-worker-0", restarted, expected) != []
    assert compare_pod("worker-failure", "tftest-ps-0", restarted, expected) != []
    assert compare_pod("ps-failure", "tftest-ps-0", expected[:3], expected) == []
    assert compare_pod("ps-failure", "tftest-ps-0", [*expected[:2], ("Error", 0, "las1")], expected) != []


def test_known_divergences_are_recognised_by_their_exact_shape() -> None:
    expected = [("Running", 2, "las1"), ("Terminating", 2, "las1"), ("Error", 2, "las1")]
    completed = [*expected[:-1], ("Completed", 2, "las1")]
    assert known_pod_divergence("worker-failure", completed, expected) == KILLED_RIGHT_AFTER_RESTART
    assert known_pod_divergence("normal", completed, expected) is None
    assert (
        known_pod_divergence("worker-failure", [*expected[:-1], ("Completed", 1, "las1")], expected) is None
    )
    finished = [("Running", 0, "las1"), ("Completed", 0, "las1")]
    deleted_before_phase = [*finished, ("Terminating", 0, "las1"), ("Completed", 0, "las1")]
    assert (
        known_pod_divergence("worker-failure", deleted_before_phase, finished, real_node=True)
        == DELETED_BEFORE_PHASE_REPORTED
    )
    assert known_pod_divergence("worker-failure", deleted_before_phase, finished) is None
    assert known_pod_divergence("normal", deleted_before_phase, finished, real_node=True) is None
    assert (
        known_pod_divergence(
            "worker-failure", [*finished, ("Terminating", 0, "las1")], finished, real_node=True
        )
        is None
    )
    podgroup = [("", 4, 0), ("Inqueue", 4, 0), ("Running", 4, 0), ("Running", 4, 4), ("Running", 4, 2)]
    for torn_down in (
        [*podgroup, ("Pending", 4, 0)],
        [*podgroup, ("Unknown", 4, 1)],
        [*podgroup, ("Running", 4, 1)],
    ):
        assert (
            known_podgroup_divergence("worker-failure", torn_down, podgroup, podgroup)
            == PODGROUP_SEEN_DURING_TEARDOWN
        )
        assert known_podgroup_divergence("normal", torn_down, podgroup, podgroup) is None
    wrong_before = [*podgroup[:3], ("Running", 4, 1)]
    assert (
        known_podgroup_divergence(
            "worker-failure", [*wrong_before, ("Pending", 4, 0)], wrong_before, podgroup
        )
        is None
    )
    assert known_podgroup_divergence("worker-failure", podgroup, podgroup, podgroup) is None


def test_a_deletion_higher_on_the_same_fall_is_known_on_the_real_node_only() -> None:
    expected = [("", 4, 0), ("Inqueue", 4, 0), ("Running", 4, 0), ("Running", 4, 4), ("Running", 4, 1)]
    higher = [*expected[:-1], ("Running", 4, 3)]
    assert known_finishing_divergence(higher, expected) == FINISHED_PHASE_REPORTED_LATE
    assert known_finishing_divergence([*expected[:-1], ("Running", 4, 0)], expected) is None
    rose_again = [*higher, ("Running", 4, 4)]
    assert known_finishing_divergence(rose_again, expected) is None
    assert known_finishing_divergence([(s, 3, r) for s, _m, r in higher], expected) is None
    assert known_finishing_divergence(expected, expected) is None


def test_teardown_starts_with_the_first_terminating_pod() -> None:
    lines = [
        "tftest-ps-0 1/1 Running 1 (0s ago) 7s 10.0.0.1 las1 <none> <none>",
        "tftest-ps-0 1/1 Terminating 1 (2s ago) 9s 10.0.0.1 las1 <none> <none>",
        "tftest-ps-0 0/1 Error 1 (2s ago) 9s 10.0.0.1 las1 <none> <none>",
    ]
    assert teardown_started(lines, [7.0, 9.0, 9.1]) == 9.0
    assert teardown_started(lines[:1], [7.0]) is None
    assert lines_before(["a", "b", "c"], [1.0, 2.0, 3.0], 2.5) == ["a", "b"]


def test_shortened_manifests_divide_every_sleep_and_keep_the_rest() -> None:
    for name, sleeps in (
        ("normal", ["6s", "6s"]),
        ("worker-failure", ["2s", "6s"] * 2),
        ("ps-failure", ["3s", "6s"]),
    ):
        original = (seed_dir() / f"{name}.yaml").read_text(encoding="utf-8")
        shortened = shorten_manifest(original, 5)
        assert [word.split()[1] for word in _sleeps(shortened)] == sleeps
        unslept = yaml.safe_load(shortened.replace("sleep ", "SLEEP "))
        assert unslept["metadata"] == yaml.safe_load(original)["metadata"]
        assert shorten_manifest(original, 1) == original


def test_the_back_off_keeps_the_kubelets_latency_when_shortened() -> None:
    assert backoff_base_for(1) == 10
    assert 2 * 2 + backoff_base_for(5) > 6 + 1  # worker-0's second restart after the PS's first


def _sleeps(text: str) -> list[str]:
    import re

    return re.findall(r"sleep \S+", text)


def test_the_fixture_is_the_seed_transcript() -> None:
    assert (
        Path(__file__)
        .with_name("seed_transcript.txt")
        .read_text(encoding="utf-8")
        .startswith("Kubeflow TFJob")
    )
