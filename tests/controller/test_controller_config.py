"""Flags, their TFGANG_* environment variables, and clear errors for bad values."""

from __future__ import annotations

import pytest

from controller.config import DEFAULT_LEASE_NAME, parse_config


def test_defaults_match_upstream_flags() -> None:
    config = parse_config([], environ={})
    assert config.kubeconfig is None
    assert config.ops_port == 8082
    assert config.namespace == ""
    assert config.leader_election is None
    assert config.settings.gang_scheduler_name == "volcano"
    assert config.settings.volcano
    assert (config.kube_api_qps, config.kube_api_burst) == (20.0, 30)


def test_environment_supplies_flags_and_command_line_wins() -> None:
    environ = {"TFGANG_NAMESPACE": "team-a", "TFGANG_OPS_PORT": "9000", "TFGANG_KUBE_API_QPS": "50"}
    config = parse_config(["--ops-port", "9100"], environ=environ)
    assert config.namespace == "team-a"
    assert config.ops_port == 9100
    assert config.kube_api_qps == 50.0


def test_the_pending_reason_grace_is_a_flag_with_the_settings_default() -> None:
    assert parse_config([], environ={}).settings.pending_reason_grace_seconds == 10.0
    config = parse_config([], environ={"TFGANG_PENDING_REASON_GRACE": "0"})
    assert config.settings.pending_reason_grace_seconds == 0.0
    with pytest.raises(SystemExit):
        parse_config(["--pending-reason-grace", "-1"], environ={})


def test_empty_gang_scheduler_name_turns_gang_scheduling_off() -> None:
    config = parse_config(["--gang-scheduler-name", ""], environ={})
    assert not config.settings.gang_enabled


def test_leader_election_lease_defaults_to_upstream_name_and_watched_namespace() -> None:
    config = parse_config(["--leader-elect", "--namespace", "ml", "--identity", "me"], environ={})
    assert config.leader_election is not None
    assert config.leader_election.name == DEFAULT_LEASE_NAME
    assert config.leader_election.namespace == "ml"
    assert config.leader_election.identity == "me"


def test_leader_election_from_environment_boolean() -> None:
    config = parse_config([], environ={"TFGANG_LEADER_ELECT": "true", "POD_NAMESPACE": "ops"})
    assert config.leader_election is not None
    assert config.leader_election.namespace == "ops"
    assert config.leader_election.identity  # generated


@pytest.mark.parametrize(
    "argv",
    [
        ["--ops-port", "http"],
        ["--ops-port", "70000"],
        ["--kube-api-qps", "0"],
        ["--workers", "-1"],
        ["--leader-elect", "--lease-duration", "5", "--renew-deadline", "10"],
    ],
)
def test_bad_values_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_config(argv, environ={})
    assert exited.value.code == 2
    assert "error" in capsys.readouterr().err


def test_bad_boolean_in_environment_is_a_usage_error() -> None:
    with pytest.raises(SystemExit):
        parse_config([], environ={"TFGANG_LEADER_ELECT": "maybe"})


def test_log_level_is_case_insensitive() -> None:
    assert parse_config([], environ={"TFGANG_LOG_LEVEL": "debug"}).log_level == "DEBUG"
