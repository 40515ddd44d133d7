"""``tfgang-certs issue`` writes a usable certificate directory; flags also come from TFGANG_*."""

from __future__ import annotations

from pathlib import Path

import pytest

from certs.__main__ import main
from certs.files import read_cert_dir
from certs.serving import dns_names_of


def test_issue_writes_the_three_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["issue", "--service", "hook", "--namespace", "ns", "--out", str(out)], environ={}) == 0
    serving = read_cert_dir(out)
    assert dns_names_of(serving.cert_pem) == ["hook", "hook.ns", "hook.ns.svc"]
    assert "wrote ca.crt, tls.crt, tls.key" in capsys.readouterr().out


def test_flags_from_environment(tmp_path: Path) -> None:
    environ = {
        "TFGANG_SERVICE": "hook",
        "TFGANG_NAMESPACE": "ns",
        "TFGANG_OUT": str(tmp_path),
        "TFGANG_DNS_NAME": "localhost,extra.example",
        "TFGANG_IP_ADDRESS": "127.0.0.1",
        "TFGANG_VALID_DAYS": "7",
    }
    assert main(["issue"], environ=environ) == 0
    serving = read_cert_dir(tmp_path)
    assert dns_names_of(serving.cert_pem)[-2:] == ["localhost", "extra.example"]


def test_command_line_wins_over_environment(tmp_path: Path) -> None:
    environ = {"TFGANG_SERVICE": "from-env", "TFGANG_NAMESPACE": "ns", "TFGANG_OUT": str(tmp_path)}
    assert main(["issue", "--service", "from-flag"], environ=environ) == 0
    assert dns_names_of(read_cert_dir(tmp_path).cert_pem)[0] == "from-flag"


def test_missing_flags_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["issue", "--service", "hook"], environ={})
    assert exit_info.value.code == 2
    assert "--namespace, --out" in capsys.readouterr().err


def test_bad_values_are_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["issue", "--service", "h", "--namespace", "n", "--out", str(tmp_path), "--ip-address", "x"]
    assert main(argv, environ={}) == 1
    assert "invalid IP address" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["issue", "--service", "h"], environ={"TFGANG_VALID_DAYS": "many"})
