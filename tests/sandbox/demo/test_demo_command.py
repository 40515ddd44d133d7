"""`tfgang-sandbox demo` as a newcomer runs it: kubectl's own streams, a verdict, an exit code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.__main__ import main

REPO = Path(__file__).resolve().parents[3]


def run_demo(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sandbox", "demo", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def test_the_normal_experiment_shows_kubectls_streams_and_succeeds(tmp_path: Path) -> None:
    done = run_demo("normal", "--speed", "10", "--workdir", str(tmp_path), "--transcript")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    phases = [line for line in lines if line.startswith("==> ")]
    assert any("starting the local cluster" in line for line in phases)
    assert "==> kubectl apply -f - (examples/seed/normal.yaml with its sleeps divided by 10)" in phases
    assert phases[-1].startswith(
        "==> normal: TFJob Succeeded, PodGroup deleted, pods Completed: as in the transcript"
    )
    headers = {
        "tfjob": ["NAME", "STATE", "AGE"],
        "podgroup": ["NAME", "STATUS", "MINMEMBER", "RUNNINGS", "AGE", "QUEUE"],
        "pod": [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED",
            "NODE",
            "READINESS",
            "GATES",
        ],
    }
    for label, header in headers.items():
        shown = [line.split("|", 1)[1].split() for line in lines if line.split("|", 1)[0].strip() == label]
        assert header in shown, label
    assert any(
        line.split("|")[1].split()[:2] == ["tftest", "Succeeded"]
        for line in lines
        if line.startswith("tfjob")
    )
    assert any(line.startswith("describe |") and '"task":{"type":"ps","index":0}' in line for line in lines)
    assert "$ kubectl get po -owide -w" in lines
    assert (tmp_path / "logs" / "controller.log").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sideways"], "invalid choice: 'sideways'"),
        (["normal", "--speed", "0"], "must be between 1 and 20"),
        (["normal", "--speed", "fast"], "not a number"),
    ],
)
def test_bad_arguments_are_refused_with_a_clear_message(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["demo", *args])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_a_missing_kubectl_is_reported_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "normal", "--kubectl", str(tmp_path / "no-kubectl")]) == 1
    captured = capsys.readouterr()
    assert "is not an executable file" in captured.err
    assert "starting the local cluster" not in captured.out
