"""The seed-fidelity checks, shared by the shortened (default) and verbatim (slow) replays.

A test module subclasses ``SeedFidelityChecks`` and provides a ``replays`` fixture: each
experiment's ``ExperimentRecord`` from ``replaying.replay_seed``. The comparison rules, and the
timing-dependent differences they tolerate, are in ``fidelity.py``; a difference that has the exact
shape of a known divergence of the sandbox's own components is reported as xfail with its cause.
"""

from __future__ import annotations

import pytest

from sandbox.seedreplay import ExperimentRecord
from tests.sandbox.demo.fidelity import (
    EXPERIMENT_ORDER,
    compare_pod,
    compare_podgroup,
    data_lines,
    known_finishing_divergence,
    known_pod_divergence,
    known_podgroup_divergence,
    lines_before,
    parse_transcript,
    pod_states,
    podgroup_states,
    teardown_started,
    tfjob_states,
)

TRANSCRIPT, TF_CONFIG = parse_transcript()


def shown(record: ExperimentRecord, stream: str) -> str:
    """What kubectl printed for ``stream``, to explain a failure."""
    return f"kubectl get {stream} -owide -w showed:\n" + "\n".join(record.streams[stream])


class SeedFidelityChecks:
    real_node = False
    """The replays ran on the real node (its kubelet and Volcano): their known races are named so."""

    @pytest.mark.parametrize("experiment", EXPERIMENT_ORDER)
    def test_experiment_ends_in_the_transcripts_final_state(
        self, replays: dict[str, ExperimentRecord], experiment: str
    ) -> None:
        record = replays[experiment]
        assert record.missing == []
        assert record.reached

    @pytest.mark.parametrize("experiment", EXPERIMENT_ORDER)
    def test_tfjob_states_are_the_transcripts(
        self, replays: dict[str, ExperimentRecord], experiment: str
    ) -> None:
        observed = tfjob_states(replays[experiment].streams["tfjob"])
        expected = tfjob_states(TRANSCRIPT[experiment].streams["tfjob"])
        assert observed == expected, shown(replays[experiment], "tfjob")

    @pytest.mark.parametrize("experiment", EXPERIMENT_ORDER)
    def test_podgroup_states_are_the_transcripts(
        self, replays: dict[str, ExperimentRecord], experiment: str
    ) -> None:
        record = replays[experiment]
        observed = podgroup_states(record.streams["podgroup"])
        expected = podgroup_states(TRANSCRIPT[experiment].streams["podgroup"])
        problems = compare_podgroup(observed, expected)
        teardown = teardown_started(data_lines(record.streams["po"]), record.arrivals["po"])
        if problems and teardown is not None:
            podgroup_lines = data_lines(record.streams["podgroup"])
            before = podgroup_states(lines_before(podgroup_lines, record.arrivals["podgroup"], teardown))
            if reason := known_podgroup_divergence(
                experiment, observed, before, expected, real_node=self.real_node
            ):
                pytest.xfail(reason)
        if problems and self.real_node and (reason := known_finishing_divergence(observed, expected)):
            pytest.xfail(reason)
        assert problems == [], shown(replays[experiment], "podgroup")

    @pytest.mark.parametrize("experiment", EXPERIMENT_ORDER)
    def test_pod_states_are_the_transcripts(
        self, replays: dict[str, ExperimentRecord], experiment: str
    ) -> None:
        observed = pod_states(replays[experiment].streams["po"])
        expected = pod_states(TRANSCRIPT[experiment].streams["po"])
        assert sorted(observed) == sorted(expected), shown(replays[experiment], "po")
        problems: list[str] = []
        divergences: list[str] = []
        for name in sorted(expected):
            differences = compare_pod(experiment, name, observed[name], expected[name])
            reason = (
                known_pod_divergence(experiment, observed[name], expected[name], real_node=self.real_node)
                if differences
                else None
            )
            (divergences if reason else problems).extend(
                f"{diff} ({reason})" if reason else diff for diff in differences
            )
        assert problems == [], shown(replays[experiment], "po")
        if divergences:
            pytest.xfail("; ".join(divergences))

    @pytest.mark.parametrize("experiment", ["normal", "ps-failure"])
    def test_ps_environment_shows_the_seeds_tf_config(
        self, replays: dict[str, ExperimentRecord], experiment: str
    ) -> None:
        environment = [line.strip() for line in replays[experiment].environment]
        assert environment[0] == "Environment:"
        assert f"TF_CONFIG:  {TF_CONFIG}" in environment
