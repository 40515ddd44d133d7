"""Flags over the environment: the flag, else TFGANG_<FLAG>, else the default; strict values."""

from __future__ import annotations

import argparse

import pytest

from kube.flags import Flags, boolean, port


def _parser(environ: dict[str, str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="t")
    sub = parser.add_subparsers(dest="command").add_parser("run")
    for container in (parser, sub):
        flags = Flags(environ)
        flags.add(container, "--port", 9443, "port", type=port)
        flags.add(container, "--on", False, "switch", switch=True)
        flags.add(container, "--name", None, "names", repeated=True)
        flags.add(container, "--kubeconfig", None, "kubeconfig", also=("KUBECONFIG",))
    return parser


def test_flag_beats_environment_beats_default() -> None:
    assert _parser({}).parse_args([]).port == 9443
    assert _parser({"TFGANG_PORT": "8443"}).parse_args([]).port == 8443
    assert _parser({"TFGANG_PORT": "8443"}).parse_args(["--port", "9443"]).port == 9443
    assert _parser({"TFGANG_PORT": "8443"}).parse_args(["run", "--port", "9443"]).port == 9443


def test_switches_and_lists() -> None:
    args = _parser({"TFGANG_ON": "true", "TFGANG_NAME": "a, b,"}).parse_args([])
    assert (args.on, args.name) == (True, ["a", "b"])
    args = _parser({"TFGANG_NAME": "a,b"}).parse_args(["--on", "--name", "c", "--name", "d"])
    assert (args.on, args.name) == (True, ["c", "d"])
    assert _parser({"TFGANG_ON": "off"}).parse_args([]).on is False


def test_fallback_variables_come_after_the_flag_s_own() -> None:
    assert _parser({"KUBECONFIG": "/k"}).parse_args([]).kubeconfig == "/k"
    assert _parser({"KUBECONFIG": "/k", "TFGANG_KUBECONFIG": "/t"}).parse_args([]).kubeconfig == "/t"
    assert _parser({"KUBECONFIG": ""}).parse_args([]).kubeconfig is None


@pytest.mark.parametrize(
    ("environ", "argv", "message"),
    [
        ({"TFGANG_PORT": "94x3"}, [], "TFGANG_PORT='94x3': not an integer"),
        ({"TFGANG_PORT": "70000"}, [], "TFGANG_PORT='70000': not a port number"),
        ({"TFGANG_ON": "ture"}, [], "TFGANG_ON='ture': not a boolean"),
        ({}, ["--port", "x"], "argument --port: not an integer: 'x'"),
    ],
)
def test_bad_values_are_usage_errors_naming_their_source(
    environ: dict[str, str], argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _parser(environ).parse_args(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("text", ["", "maybe", "2", "truee"])
def test_booleans_are_strict(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        boolean(text)
