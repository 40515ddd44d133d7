"""Upstream's condition update rules, one test per rule."""

from __future__ import annotations

from tfjob.planner.conditions import last_condition_type, new_condition, set_condition
from tfjob.wire import JobCondition


def _cond(type_: str, status: str = "True", reason: str = "", when: str = "t1") -> JobCondition:
    return new_condition(type_, status, reason or f"TFJob{type_}", f"{type_} message", when)


def _types(conditions: list[JobCondition]) -> list[tuple[str, str]]:
    return [(c.get("type", ""), c.get("status", "")) for c in conditions]


def test_a_true_failed_condition_is_absorbing() -> None:
    start = [_cond("Created"), _cond("Failed")]
    assert set_condition(start, _cond("Running", when="t2")) == start
    assert set_condition(start, _cond("Succeeded", when="t2")) == start


def test_same_type_status_and_reason_changes_nothing() -> None:
    start = [_cond("Created"), _cond("Running")]
    update = new_condition("Running", "True", "TFJobRunning", "another message", "t9")
    assert set_condition(start, update) == start


def test_same_status_new_reason_keeps_the_transition_time() -> None:
    start = [_cond("Created"), _cond("Running", when="t1")]
    result = set_condition(start, _cond("Running", reason="Other", when="t5"))
    assert result[-1]["lastTransitionTime"] == "t1"
    assert result[-1]["lastUpdateTime"] == "t5"
    assert result[-1]["reason"] == "Other"


def test_running_and_restarting_drop_each_other() -> None:
    running = [_cond("Created"), _cond("Running")]
    restarting = set_condition(running, _cond("Restarting"))
    assert _types(restarting) == [("Created", "True"), ("Restarting", "True")]
    assert _types(set_condition(restarting, _cond("Running"))) == [("Created", "True"), ("Running", "True")]


def test_terminal_conditions_turn_running_false_and_keep_its_reason() -> None:
    start = [_cond("Created"), _cond("Running", when="t1")]
    result = set_condition(start, _cond("Succeeded", when="t2"))
    assert _types(result) == [("Created", "True"), ("Running", "False"), ("Succeeded", "True")]
    assert result[1]["reason"] == "TFJobRunning" and result[1]["lastTransitionTime"] == "t1"


def test_terminal_conditions_leave_restarting_alone() -> None:
    start = [_cond("Created"), _cond("Restarting")]
    result = set_condition(start, _cond("Failed"))
    assert _types(result) == [("Created", "True"), ("Restarting", "True"), ("Failed", "True")]


def test_a_changed_condition_moves_to_the_end_and_is_the_state() -> None:
    start = [_cond("Created"), _cond("Suspended"), _cond("Running", "False", reason="TFJobSuspended")]
    result = set_condition(start, _cond("Suspended", "False", reason="TFJobResumed"))
    assert _types(result) == [("Created", "True"), ("Running", "False"), ("Suspended", "False")]
    assert last_condition_type(result) == "Suspended"
    assert last_condition_type([]) == ""
