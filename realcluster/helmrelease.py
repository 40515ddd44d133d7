"""tfgang installed on the one-node cluster the way a user installs it.

The commands are the README's own ("Installing on a cluster"), read from the README at run time
and run word for word but for the image: the README's ``<your-registry>/tfgang`` becomes the
image built here from the repository's Dockerfile (``scripts/real-images``), whose tag and the
``helm test`` image (any image with kubectl) are given as ``--set`` values after the README's. The
``helm`` and ``kubectl`` are the pinned builds of ``scripts/real-components``, talking to the node's
kube-apiserver through the loopback port of its kubeconfig.

Between the README's two commands the user waits for the Deployments to roll out and the webhook
to answer; so does this.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _source_tree() -> Path:
    """The clone the README's commands run in (they name the chart ``charts/tfgang``)."""
    for root in (Path(__file__).resolve().parents[1], Path.cwd()):
        if (root / "charts" / "tfgang" / "Chart.yaml").exists():
            return root
    raise FileNotFoundError("charts/tfgang not found: run from a clone of the tfgang repository")


REPO = _source_tree()
README = REPO / "README.md"
DEPLOYMENT_DOC = REPO / "docs" / "deployment.md"
RELEASE = "tfgang"
NAMESPACE = "tfgang"
FULLNAME = "tfgang"  # a release name containing "tfgang" is the objects' prefix
WEBHOOK = f"{FULLNAME}-webhook"
CONTROLLER = f"{FULLNAME}-controller"
CERT_SECRET = f"{FULLNAME}-webhook-tls"
MUTATING = f"{FULLNAME}-mutating"
VALIDATING = f"{FULLNAME}-validating"
README_IMAGE = "<your-registry>/tfgang"
PROBE = json.dumps(
    {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "tfgang-webhook-probe", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "tensorflow", "image": "busybox:1.37.0-glibc", "command": ["true"]},
        ]}}}}},
    }
)  # fmt: skip
ROLLOUT_SECONDS = 180


class ReleaseError(RuntimeError):
    """A helm or kubectl command failed."""


@dataclass(frozen=True)
class Image:
    repository: str
    tag: str
    archive: Path

    @property
    def name(self) -> str:
        return f"{self.repository}:{self.tag}"


@dataclass(frozen=True)
class Images:
    """``images.txt`` of ``scripts/real-images``: one ``<archive file> <image name>`` a line."""

    images: tuple[Image, ...]

    @classmethod
    def read(cls, folder: Path) -> Images:
        images = []
        for line in (folder / "images.txt").read_text().splitlines():
            if not line.strip():
                continue
            archive, name = line.split()
            repository, _, tag = name.rpartition(":")
            images.append(Image(repository, tag, folder / archive))
        return cls(tuple(images))

    def by_repository(self, ending: str) -> list[Image]:
        """The images whose repository is ``ending`` or ends in ``/ending``, in the file's order."""
        return [
            image
            for image in self.images
            if image.repository == ending or image.repository.endswith(f"/{ending}")
        ]

    @property
    def tfgang(self) -> Image:
        """The tfgang image a user installs (the first tag listed)."""
        return self.by_repository("tfgang")[0]

    @property
    def tfgang_upgrade(self) -> Image:
        """A second tag of the tfgang image, to ``helm upgrade`` to."""
        tagged = self.by_repository("tfgang")
        if len(tagged) < 2:
            raise ReleaseError("images.txt lists one tfgang tag; the upgrade needs a second one")
        return tagged[1]

    @property
    def kubectl(self) -> Image:
        """The ``helm test`` image: any image with kubectl on its PATH."""
        found = [image for image in self.images if "kubectl" in image.repository]
        if not found:
            raise ReleaseError("images.txt lists no kubectl image for helm test")
        return found[0]


def documented_commands(document: Path, heading: str) -> list[list[str]]:
    """Each command of the first ``sh`` block under ``heading`` (a whole heading line, ``## ...``),
    as argv; comments dropped, continuation lines joined."""
    text = document.read_text(encoding="utf-8")
    if f"\n{heading}\n" not in text:
        raise ReleaseError(f"{document.name} has no heading {heading!r}")
    section = text.split(f"\n{heading}\n", 1)[1].split("\n#", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    if block is None:
        raise ReleaseError(f"{document.name}'s {heading!r} has no sh block")
    joined = block.group(1).replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in joined.splitlines() if line.strip()]


def readme_install_commands(readme: Path = README) -> list[list[str]]:
    """The README's "Installing on a cluster": ``helm install ...`` and ``helm test ...``."""
    return documented_commands(readme, "## Installing on a cluster")


def documented_uninstall_commands(document: Path = DEPLOYMENT_DOC) -> list[list[str]]:
    """docs/deployment.md's "Uninstall": ``helm uninstall ...`` and what it says to delete after."""
    return documented_commands(document, "## Uninstall")


def image_values(image: Image, test_image: Image) -> list[str]:
    """What replaces the README's image: ``image.repository`` (in the README's own ``--set``), and
    after the README's words the tag and the ``helm test`` image. Both are imported into the node,
    never pulled: ``Never`` keeps a missing image from sending a pull anywhere."""
    return [
        "--set", f"image.tag={image.tag}",
        "--set", "image.pullPolicy=Never",
        "--set", f"helmTest.image.repository={test_image.repository}",
        "--set", f"helmTest.image.tag={test_image.tag}",
        "--set", "helmTest.image.pullPolicy=Never",
    ]  # fmt: skip


def localised(command: list[str], image: Image) -> list[str]:
    """The README's command with ``<your-registry>/tfgang`` replaced by the local repository."""
    return [word.replace(README_IMAGE, image.repository) for word in command]


@dataclass
class Release:
    """The chart installed as ``RELEASE`` in ``NAMESPACE``, driven by the pinned helm and kubectl."""

    helm: Path
    kubectl: Path
    kubeconfig: Path
    workdir: Path
    images: Images
    timings: dict[str, float] = field(default_factory=dict)
    installed: bool = False

    def _env(self) -> dict[str, str]:
        # helm keeps its cache and configuration in the run's own folder, never in ~.
        env = dict(os.environ)
        for kind in ("CACHE", "CONFIG", "DATA"):
            env[f"HELM_{kind}_HOME"] = str(self.workdir / f"helm-{kind.lower()}")
        env["KUBECONFIG"] = str(self.kubeconfig)
        return env

    def run(
        self, argv: Sequence[str], timeout: float = 300.0, check: bool = True, input_text: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``helm ...`` or ``kubectl ...`` (the pinned binaries), from the repository's root."""
        binary = {"helm": self.helm, "kubectl": self.kubectl}.get(argv[0])
        if binary is None:
            raise ReleaseError(f"not a helm or kubectl command: {shlex.join(argv)}")
        done = subprocess.run(
            [str(binary), *argv[1:]],
            cwd=REPO,
            env=self._env(),
            input=input_text,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise ReleaseError(f"{shlex.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    def kubectl_json(self, *args: str) -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(self.run(["kubectl", *args, "-o", "json"]).stdout)
        return answer

    def _timed(
        self, what: str, argv: Sequence[str], timeout: float = 300.0
    ) -> subprocess.CompletedProcess[str]:
        started = time.monotonic()
        try:
            return self.run(argv, timeout)
        finally:
            self.timings[what] = time.monotonic() - started

    def install(self) -> None:
        """The README's ``helm install``, the rollout a user waits for, then its ``helm test``."""
        install, test = readme_install_commands()
        if install[:2] != ["helm", "install"] or test[:2] != ["helm", "test"]:
            raise ReleaseError(f"the README's commands changed: {install!r}, {test!r}")
        image = self.images.tfgang
        self._timed("helm install", [*localised(install, image), *image_values(image, self.images.kubectl)])
        self.installed = True
        self.wait_rolled_out()
        self._timed("helm test", localised(test, image))

    def wait_rolled_out(self) -> None:
        """Both Deployments rolled out, and kube-apiserver reaching the webhook through its Service:
        pods turn Ready a moment before kube-proxy routes the Service to them."""
        started = time.monotonic()
        for deployment in (WEBHOOK, CONTROLLER):
            self.run(
                ["kubectl", "-n", NAMESPACE, "rollout", "status", f"deployment/{deployment}",
                 f"--timeout={ROLLOUT_SECONDS}s"],
                timeout=ROLLOUT_SECONDS + 30,
            )  # fmt: skip
        self.wait_until_the_webhook_answers()
        self.timings["rollout"] = time.monotonic() - started

    def wait_until_the_webhook_answers(self, within: float = 60.0) -> None:
        """A server-side dry run of a TFJob (what ``helm test`` does) until it passes the webhook."""
        deadline = time.monotonic() + within
        while True:
            done = self.run(
                ["kubectl", "create", "--dry-run=server", "-f", "-"], check=False, input_text=PROBE
            )
            if done.returncode == 0:
                return
            if "failed calling webhook" not in done.stderr or time.monotonic() > deadline:
                raise ReleaseError(f"the webhook does not answer kube-apiserver: {done.stderr.strip()}")
            time.sleep(0.5)

    def upgrade(self, *values: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
        """``helm upgrade`` of the chart in the working tree, keeping the values given so far."""
        return self._timed(
            "helm upgrade",
            ["helm", "upgrade", RELEASE, "charts/tfgang", "-n", NAMESPACE, "--reuse-values", *values],
            timeout,
        )

    def uninstall(self) -> None:
        """The first command of docs/deployment.md's "Uninstall", word for word."""
        command = documented_uninstall_commands()[0]
        if command[:2] != ["helm", "uninstall"]:
            raise ReleaseError(f"docs/deployment.md's uninstall changed: {command!r}")
        self._timed("helm uninstall", command)
        self.installed = False
