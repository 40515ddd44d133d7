"""The install commands the real node runs are the README's and docs/deployment.md's own words."""

from __future__ import annotations

from pathlib import Path

import pytest

from realcluster.helmrelease import (
    Image,
    Images,
    ReleaseError,
    documented_commands,
    documented_uninstall_commands,
    image_values,
    localised,
    readme_install_commands,
)
from sandbox.seedreplay import fit_cpu, seed_dir


def test_the_readme_installs_then_tests_the_release() -> None:
    install, test = readme_install_commands()
    assert install[:4] == ["helm", "install", "tfgang", "charts/tfgang"]
    assert "image.repository=<your-registry>/tfgang" in install
    assert test == ["helm", "test", "tfgang", "-n", "tfgang"]


def test_only_the_image_differs_from_the_readme() -> None:
    install, _test = readme_install_commands()
    image = Image("tfgang", "0.1.0-ci", Path("tfgang.tar"))
    command = [*localised(install, image), *image_values(image, Image("kubectl", "1.37.2", Path("k.tar")))]
    assert command[: len(install)] == [word.replace("<your-registry>/tfgang", "tfgang") for word in install]
    assert command[len(install) :] == [
        "--set", "image.tag=0.1.0-ci",
        "--set", "image.pullPolicy=Never",
        "--set", "helmTest.image.repository=kubectl",
        "--set", "helmTest.image.tag=1.37.2",
        "--set", "helmTest.image.pullPolicy=Never",
    ]  # fmt: skip


def test_the_uninstall_commands_drop_their_comments() -> None:
    commands = documented_uninstall_commands()
    assert commands[0] == ["helm", "uninstall", "tfgang", "-n", "tfgang"]
    assert ["kubectl", "-n", "tfgang", "delete", "secret", "tfgang-webhook-tls"] in commands
    assert all("#" not in word for command in commands for word in command)


def test_a_missing_heading_is_an_error(tmp_path: Path) -> None:
    document = tmp_path / "doc.md"
    document.write_text("# Title\n\n## Other\n\n```sh\ntrue\n```\n")
    with pytest.raises(ReleaseError, match="no heading"):
        documented_commands(document, "## Uninstall")


def test_images_are_found_by_repository_in_the_files_order(tmp_path: Path) -> None:
    # scripts/real-images' names are normalized, as containerd's CRI looks them up.
    (tmp_path / "images.txt").write_text(
        "pause.tar localhost/pause:3.10.1\n"
        "tfgang-a.tar docker.io/library/tfgang:0.1.0\n"
        "kubectl.tar localhost/kubectl:1.37.2\n"
        "tfgang-b.tar docker.io/library/tfgang:0.1.1\n"
    )
    images = Images.read(tmp_path)
    assert images.tfgang == Image("docker.io/library/tfgang", "0.1.0", tmp_path / "tfgang-a.tar")
    assert images.tfgang_upgrade.tag == "0.1.1"
    assert images.kubectl.name == "localhost/kubectl:1.37.2"


def test_the_seed_fits_the_node_by_its_cpu_alone() -> None:
    text = (seed_dir() / "normal.yaml").read_text()
    fitted = fit_cpu(text)
    assert fitted.count('cpu: "250m"') == text.count('cpu: "1"') == 2
    assert fitted.replace('cpu: "250m"', 'cpu: "1"') == text
