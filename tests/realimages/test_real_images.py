"""The images ``scripts/real-images`` builds for a real node (mark ``real_node``): read from their
oci-archives, the way containerd imports them, without a cluster. ``$TFGANG_REAL_IMAGES`` names a
built folder; unset, the script builds or reuses one (a failed build fails the tests)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.real_node

ROOT = Path(__file__).resolve().parents[2]
IMAGES_ENV = "TFGANG_REAL_IMAGES"
REF_NAME = "org.opencontainers.image.ref.name"


@dataclass(frozen=True)
class Archive:
    """One oci-archive: its index's ref name, its config and its layers (newest last)."""

    path: Path
    ref_name: str
    config: dict[str, Any]
    layers: list[str]

    def read_file(self, path: str) -> bytes:
        """A file's content in the newest layer that has it."""
        for digest in reversed(self.layers):
            with tarfile.open(self.path) as outer:
                member = outer.extractfile(f"blobs/sha256/{digest.removeprefix('sha256:')}")
                assert member is not None
                with tarfile.open(fileobj=member) as layer:
                    for name in (path, f"./{path}"):
                        try:
                            content = layer.extractfile(name)
                        except KeyError:
                            continue
                        assert content is not None
                        return content.read()
        raise AssertionError(f"{path} is in no layer of {self.path}")

    def layer_names(self, digest: str) -> list[str]:
        with tarfile.open(self.path) as outer:
            member = outer.extractfile(f"blobs/sha256/{digest.removeprefix('sha256:')}")
            assert member is not None
            with tarfile.open(fileobj=member) as layer:
                return layer.getnames()


def read_archive(path: Path) -> Archive:
    with tarfile.open(path) as archive:

        def read(name: str) -> Any:
            member = archive.extractfile(name)
            assert member is not None
            return json.loads(member.read())

        (entry,) = read("index.json")["manifests"]
        manifest = read(f"blobs/sha256/{entry['digest'].removeprefix('sha256:')}")
        config = read(f"blobs/sha256/{manifest['config']['digest'].removeprefix('sha256:')}")
    return Archive(
        path, entry["annotations"][REF_NAME], config, [layer["digest"] for layer in manifest["layers"]]
    )


@pytest.fixture(scope="module")
def folder() -> Path:
    explicit = os.environ.get(IMAGES_ENV)
    if explicit:
        return Path(explicit)
    built = subprocess.run([ROOT / "scripts" / "real-images", "build"], capture_output=True, check=False)
    assert built.returncode == 0, built.stderr.decode(errors="replace")[-3000:]
    return Path(built.stdout.decode().split()[-1])


@pytest.fixture(scope="module")
def images(folder: Path) -> dict[str, Archive]:
    """images.txt: image name -> its archive."""
    lines = (folder / "images.txt").read_text().splitlines()
    return {name: read_archive(folder / file) for file, name in (line.split() for line in lines)}


def app_version() -> str:
    return str(yaml.safe_load((ROOT / "charts" / "tfgang" / "Chart.yaml").read_text())["appVersion"])


def test_images_are_listed_under_the_names_the_cri_looks_pods_images_up_by(
    images: dict[str, Archive],
) -> None:
    # The seed's YAML says busybox:1.37.0-glibc and the chart tfgang:<appVersion>: the CRI
    # normalizes both to docker.io/library/...; the pause image is named with its host.
    expected = {"docker.io/library/busybox:1.37.0-glibc", f"docker.io/library/tfgang:{app_version()}"}
    assert expected <= set(images)
    assert [name for name in images if name.startswith("localhost/pause:")]


def test_each_archive_carries_its_listed_name_so_a_plain_ctr_import_lands_on_it(
    images: dict[str, Archive],
) -> None:
    # `ctr images import` names an image by the archive's ref name verbatim.
    assert {name: archive.ref_name for name, archive in images.items()} == {name: name for name in images}


def test_the_tfgang_image_runs_as_the_charts_user(images: dict[str, Archive]) -> None:
    values = yaml.safe_load((ROOT / "charts" / "tfgang" / "values.yaml").read_text())
    context = values["podSecurityContext"]
    config = images[f"docker.io/library/tfgang:{app_version()}"].config["config"]
    assert config["User"] == f"{context['runAsUser']}:{context['runAsGroup']}"


def test_the_build_leaves_no_pip_configuration_or_ca_bundle_in_the_tfgang_image(
    images: dict[str, Archive],
) -> None:
    # Both are bind-mounted into the build's RUN steps only: the operator's own layers (those on
    # top of the base's) must not contain them.
    tfgang = images[f"docker.io/library/tfgang:{app_version()}"]
    base = images["docker.io/library/python:3.11.14-slim-bookworm"]
    base_layers = base.config["rootfs"]["diff_ids"]
    assert tfgang.config["rootfs"]["diff_ids"][: len(base_layers)] == base_layers
    own = [name for digest in tfgang.layers[len(base_layers) :] for name in tfgang.layer_names(digest)]
    assert own
    assert not [name for name in own if name.endswith(("pip.conf", "ca-certificates.crt"))]


def test_the_base_is_not_externally_managed_as_the_python_images_are_not(images: dict[str, Archive]) -> None:
    base = images["docker.io/library/python:3.11.14-slim-bookworm"]
    names = [name for digest in base.layers for name in base.layer_names(digest)]
    assert "usr/bin/python3" in {name.removeprefix("./") for name in names}
    assert not [name for name in names if name.endswith("EXTERNALLY-MANAGED")]


def test_the_helm_test_image_runs_kubectl_as_a_non_root_user(images: dict[str, Archive]) -> None:
    (kubectl,) = [archive for name, archive in images.items() if name.startswith("localhost/kubectl:")]
    config = kubectl.config["config"]
    user, _, group = config["User"].partition(":")
    assert int(user) != 0 and int(group) != 0
    names = {name.removeprefix("./") for digest in kubectl.layers for name in kubectl.layer_names(digest)}
    assert "usr/local/bin/kubectl" in names
    assert "PATH=/usr/local/bin" in config["Env"]


def elf_interpreter(binary: bytes) -> str | None:
    """The dynamic linker an ELF64 executable names (PT_INTERP), None for a static one."""
    assert binary[:4] == b"\x7fELF" and binary[4] == 2
    (phoff,) = struct.unpack_from("<Q", binary, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", binary, 0x36)
    for index in range(phnum):
        header = phoff + index * phentsize
        kind, _, offset, _, _, size = struct.unpack_from("<IIQQQQ", binary, header)
        if kind == 3:
            return binary[offset : offset + size].rstrip(b"\0").decode()
    return None


def test_the_helm_test_images_kubectl_finds_its_dynamic_linker_in_the_image(
    images: dict[str, Archive],
) -> None:
    # A cgo build links glibc dynamically; on scratch it would fail with "no such file".
    (kubectl,) = [archive for name, archive in images.items() if name.startswith("localhost/kubectl:")]
    interpreter = elf_interpreter(kubectl.read_file("usr/local/bin/kubectl"))
    if interpreter is not None:
        names = {name.removeprefix("./") for digest in kubectl.layers for name in kubectl.layer_names(digest)}
        assert interpreter.removeprefix("/") in names
        assert "lib/x86_64-linux-gnu/libc.so.6" in names
