"""``tfgang-webhook`` flags and their ``TFGANG_*`` environment equivalents."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from webhook.config import parse_config


def test_defaults() -> None:
    config = parse_config(["--cert-dir", "/certs"], environ={})
    assert (config.port, config.ops_port, config.namespace, config.kubeconfig) == (9443, 8081, None, None)
    assert config.settings.gang_scheduler_name == "volcano" and config.settings.cluster_domain == ""
    assert config.self_managed is None
    assert config.max_body_bytes == 4 * 1024 * 1024


def test_environment_as_the_chart_sets_it() -> None:
    environ = {
        "POD_NAMESPACE": "kubeflow",
        "TFGANG_CERT_DIR": "/var/run/tfgang/certs",
        "TFGANG_PORT": "10250",
        "TFGANG_OPS_PORT": "8090",
        "TFGANG_LOG_LEVEL": "debug",
        "TFGANG_NAMESPACE": "team-a",
        "TFGANG_CERT_SECRET": "tfgang-certs",
        "TFGANG_SERVICE_NAME": "tfgang-webhook",
        "TFGANG_MUTATING_WEBHOOK_CONFIGURATION": "tfgang-mutating",
        "TFGANG_VALIDATING_WEBHOOK_CONFIGURATION": "tfgang-validating",
        "TFGANG_GANG_SCHEDULER_NAME": "",
        "TFGANG_CLUSTER_DOMAIN": "cluster.local",
    }
    config = parse_config([], environ=environ)
    assert (config.cert_dir, config.port, config.ops_port) == ("/var/run/tfgang/certs", 10250, 8090)
    assert config.log_level == "DEBUG" and config.namespace == "team-a"
    assert config.settings.gang_scheduler_name == "" and not config.settings.gang_enabled
    assert config.settings.cluster_domain == "cluster.local"
    managed = config.self_managed
    assert managed is not None
    assert (managed.secret, managed.secret_namespace, managed.service) == (
        "tfgang-certs",
        "kubeflow",
        "tfgang-webhook",
    )
    assert managed.mutating_webhook_configurations == ("tfgang-mutating",)
    assert managed.validating_webhook_configurations == ("tfgang-validating",)


def test_flags_win_over_environment() -> None:
    config = parse_config(
        ["--cert-dir", "/a", "--port", "1234"], environ={"TFGANG_CERT_DIR": "/b", "TFGANG_PORT": "9"}
    )
    assert (config.cert_dir, config.port) == ("/a", 1234)


def test_an_explicit_flag_equal_to_its_default_still_wins_over_the_environment() -> None:
    config = parse_config(["--cert-dir", "/a", "--port", "9443"], environ={"TFGANG_PORT": "10250"})
    assert config.port == 9443


@pytest.mark.parametrize(("value", "on"), [("yes", True), ("1", True), ("off", False), ("False", False)])
def test_environment_booleans_are_read_strictly(value: str, on: bool) -> None:
    environ = {"TFGANG_SELF_MANAGED": value, "TFGANG_CERT_SECRET_NAMESPACE": "ns"}
    assert (parse_config(["--cert-dir", "/c"], environ=environ).self_managed is not None) is on


def test_self_managed_flag_uses_the_default_secret() -> None:
    config = parse_config(["--cert-dir", "/c", "--self-managed", "--cert-secret-namespace", "ns"], environ={})
    assert config.self_managed is not None and config.self_managed.secret == "tfgang-webhook-certs"


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [
        ([], {}, "--cert-dir"),
        (["--cert-dir", "/c", "--port", "70000"], {}, "argument --port: not a port number"),
        (["--cert-dir", "/c"], {"TFGANG_PORT": "https"}, "TFGANG_PORT='https': not an integer"),
        (["--cert-dir", "/c"], {"TFGANG_SELF_MANAGED": "ture"}, "TFGANG_SELF_MANAGED='ture': not a boolean"),
        (["--cert-dir", "/c", "--self-managed"], {}, "--cert-secret-namespace"),
        (["--cert-dir", "/c", "--max-body-bytes", "10"], {}, "--max-body-bytes"),
        (["--cert-dir", "/c", "--log-level", "chatty"], {}, "--log-level must be one of"),
    ],
)
def test_bad_flags_are_usage_errors(
    argv: list[str], environ: dict[str, str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_config(argv, environ=environ)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_the_command_reports_a_bad_kubeconfig_as_a_json_log_and_exits_1(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "webhook",
            "--cert-dir",
            str(tmp_path),
            "--kubeconfig",
            str(tmp_path / "missing"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    record = json.loads(result.stderr.strip().splitlines()[-1])
    assert record["level"] == "ERROR"
    assert "does not exist" in record["message"]


def test_the_command_reports_a_port_in_use_and_exits_1(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "webhook", "--kubeconfig", str(kubeconfig), "--cert-dir", str(tmp_path),
             "--host", "127.0.0.1", "--port", "0", "--ops-port", str(port)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert result.returncode == 1
    record = json.loads(result.stderr.strip().splitlines()[-1])
    assert record["level"] == "ERROR" and "address already in use" in record["message"]
    assert "never awaited" not in result.stderr
