"""The Dockerfile, checked statically (no Docker engine here): stages, pinned base, non-root user."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from .render import find_objects, render_chart

ROOT = Path(__file__).resolve().parents[2]
# python:<major.minor.patch>-<variant>, e.g. python:3.11.14-slim-bookworm: never `latest`, never a
# floating `3.11`, and no registry host name in front.
PINNED_PYTHON = re.compile(r"^python:(?P<version>\d+\.\d+\.\d+)-slim-[a-z]+$")


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str


def instructions(text: str) -> list[Instruction]:
    """Dockerfile instructions with line continuations joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    result: list[Instruction] = []
    for line in joined.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        keyword, _, arguments = stripped.partition(" ")
        result.append(Instruction(keyword.upper(), " ".join(arguments.split())))
    return result


def stages(parsed: list[Instruction]) -> list[list[Instruction]]:
    result: list[list[Instruction]] = []
    for instruction in parsed:
        if instruction.keyword == "FROM":
            result.append([])
        if result:
            result[-1].append(instruction)
    return result


@pytest.fixture(scope="module")
def dockerfile() -> list[Instruction]:
    return instructions((ROOT / "Dockerfile").read_text())


def test_instruction_parser_joins_continuations_and_skips_comments() -> None:
    parsed = instructions("# c\nFROM a AS b\nRUN x \\\n    y\n")
    assert parsed == [Instruction("FROM", "a AS b"), Instruction("RUN", "x y")]


def test_builder_stage_builds_a_wheel_and_runtime_installs_only_that(dockerfile: list[Instruction]) -> None:
    builder, runtime = stages(dockerfile)
    assert builder[0].arguments.endswith(" AS builder")
    assert any(i.keyword == "RUN" and "pip wheel" in i.arguments for i in builder)
    installs = [i for i in runtime if i.keyword == "RUN" and "pip install" in i.arguments]
    assert installs and all("--no-index" in i.arguments and "from=builder" in i.arguments for i in installs)
    assert not [i for i in runtime if i.keyword == "COPY" and "--from" not in i.arguments]


def test_every_base_image_is_a_pinned_python_release_without_a_registry_host(
    dockerfile: list[Instruction],
) -> None:
    requires = SpecifierSet(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    )
    for stage in stages(dockerfile):
        image = stage[0].arguments.split()[0]
        match = PINNED_PYTHON.match(image)
        assert match, f"base image {image} is not pinned to a python release tag"
        assert match.group("version") in requires


def test_the_image_runs_as_a_numeric_non_root_user(dockerfile: list[Instruction]) -> None:
    runtime = stages(dockerfile)[-1]
    [user] = [i for i in runtime if i.keyword == "USER"]
    uid, _, gid = user.arguments.partition(":")
    assert uid.isdigit() and int(uid) > 0
    assert gid == "" or (gid.isdigit() and int(gid) > 0)
    # the chart runs the pods as the same user
    for deployment in find_objects(render_chart(), "Deployment"):
        assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == int(uid)


def test_entry_points_use_exec_form_without_a_shell(dockerfile: list[Instruction]) -> None:
    runtime = stages(dockerfile)[-1]
    commands = [i for i in runtime if i.keyword in ("CMD", "ENTRYPOINT")]
    assert commands
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for command in commands:
        argv = json.loads(command.arguments)
        assert isinstance(argv, list)
        assert argv[0] not in ("sh", "/bin/sh", "bash", "/bin/bash")
        assert argv[0] in scripts


def test_the_build_copies_every_package_the_wheel_needs(dockerfile: list[Instruction]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {name.rstrip("*") for name in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    builder = stages(dockerfile)[0]
    copied = {
        source.rstrip("/")
        for i in builder
        if i.keyword == "COPY"
        for source in i.arguments.split()[:-1]
        if not source.startswith("--")
    }
    assert "sandbox" not in packages, "the sandbox is a distribution of its own (sandbox/pyproject.toml)"
    assert packages | {"pyproject.toml", project["project"]["readme"]} <= copied
    for source in copied:
        assert (ROOT / source).exists(), source


def test_the_image_holds_the_operator_but_not_the_sandbox_or_its_dependencies(
    dockerfile: list[Instruction],
) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    sandbox = tomllib.loads((ROOT / "sandbox" / "pyproject.toml").read_text())
    copied = " ".join(i.arguments for i in stages(dockerfile)[0] if i.keyword == "COPY")
    assert "sandbox" not in copied
    runtime = {_distribution(requirement) for requirement in project["project"]["dependencies"]}
    sandbox_only = {_distribution(requirement) for requirement in sandbox["project"]["dependencies"]}
    assert project["project"]["name"] in sandbox_only, "the sandbox runs the operator's wheel"
    sandbox_only.discard(project["project"]["name"])
    assert sandbox_only and not runtime & sandbox_only
    assert set(sandbox["project"]["scripts"]) == {"tfgang-sandbox"}
    assert not set(project["project"]["scripts"]) & set(sandbox["project"]["scripts"])


def _distribution(requirement: str) -> str:
    return re.split(r"[~=<>;\[ ]", requirement, maxsplit=1)[0]


@pytest.mark.parametrize("folder", ["sandbox", "realcluster"])
def test_each_development_distribution_lists_every_package_of_its_folder(folder: str) -> None:
    setuptools = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == {folder: "."}
    root = ROOT / folder
    folders = (init.parent.relative_to(root).parts for init in root.rglob("__init__.py"))
    # build/ is what a wheel build leaves behind (git ignores it)
    on_disk = {".".join((folder, *parts)) for parts in folders if "build" not in parts}
    assert set(setuptools["packages"]) == on_disk


def _dockerignore_excludes(patterns: list[str], path: str) -> bool:
    excluded = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        body = pattern[1:] if negated else pattern
        body = body.rstrip("/")
        if fnmatch.fnmatch(path, body) or fnmatch.fnmatch(path, body + "/*") or path.startswith(body + "/"):
            excluded = not negated
    return excluded


def test_dockerignore_lets_through_everything_the_build_copies(dockerfile: list[Instruction]) -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for i in stages(dockerfile)[0]:
        if i.keyword != "COPY":
            continue
        for source in i.arguments.split()[:-1]:
            if source.startswith("--"):
                continue
            path = source.rstrip("/")
            probe = f"{path}/__init__.py" if (ROOT / path).is_dir() else path
            assert not _dockerignore_excludes(patterns, probe), f"{source} is copied but ignored"


def test_dockerignore_sends_only_the_sources_into_the_build_context() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for path in (
        ".venv/bin/python",
        ".git/HEAD",
        "tests/chart/render.py",
        "docs/rbac.md",
        "charts/tfgang/Chart.yaml",
    ):
        assert _dockerignore_excludes(patterns, path), path
    for path in ("pyproject.toml", "README.md", "webhook/__init__.py", "controller/__init__.py"):
        assert not _dockerignore_excludes(patterns, path), path
