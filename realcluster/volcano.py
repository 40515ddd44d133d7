"""The real Volcano beside a real kube-apiserver, as Volcano's own chart installs it.

``scripts/real-components`` builds kube-apiserver and kube-controller-manager v1.37 and Volcano's
vc-scheduler, vc-controller-manager and vc-webhook-manager from the Go modules pinned in
``components/``, and copies Volcano's chart of the same version beside them. This module renders
that chart with the Helm SDK (as ``helm template`` would) and runs what it installs, each
component as a child process on loopback instead of a Deployment:

- every CustomResourceDefinition the chart holds (an informer whose CRD is missing never syncs);
- vc-webhook-manager with the chart's arguments, serving the chart's webhook registrations, whose
  ``clientConfig`` becomes a URL on 127.0.0.1 with a CA of our own (the chart's init job makes
  one the same way); the pod webhooks are enabled beside the chart's defaults, as
  ``custom.enabled_admissions`` allows, so that tfgang's and Volcano's both see pod CREATE;
- vc-controller-manager with the chart's arguments (queue, PodGroup, job, garbage collection);
- vc-scheduler with the chart's arguments and its default configuration plus the
  ``network-topology-aware`` plugin (``volcano_scheduler_conf``), in a folder of its own (it
  watches the folder and reloads on every event there); ``set_scheduler_conf`` rewrites it;
  the scheduler makes the ``default`` and ``root`` queues, the controller opens them.

``start_volcano(apiserver, components)`` is a context manager; ``python -m realcluster.volcano
--components DIR`` runs kube-apiserver with Volcano in the
foreground (``scripts/real-components run``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import helm_python
import yaml

from certs.authority import new_ca
from certs.serving import issue_serving_certificate
from realcluster.apiserver import (
    ChildProcess,
    RealApiServer,
    RealApiServerError,
    RealApiServerOptions,
    built_folder,
    run_in_foreground,
    write_private_file,
)
from realcluster.ports import free_port

logger = logging.getLogger(__name__)

__all__ = [
    "COMPONENTS_ENV",
    "RealVolcano",
    "VolcanoCluster",
    "find_components",
    "start_volcano",
    "start_volcano_cluster",
    "volcano_scheduler_conf",
]

COMPONENTS_ENV = "TFGANG_REAL_COMPONENTS"
"""The folder ``scripts/real-components`` prints (bin/, volcano-chart/); skips the build script."""
BUILD_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "real-components"
VOLCANO_BINARIES = ("vc-scheduler", "vc-controller-manager", "vc-webhook-manager")
RELEASE = "volcano"
NAMESPACE = "volcano-system"
# The chart's default admissions, plus the pod webhooks a cluster turns on to have Volcano check
# pods against their PodGroup (and that tfgang must then coexist with on pod CREATE).
ADMISSIONS = (
    "/jobs/mutate,/jobs/validate,/podgroups/validate,/queues/mutate,/queues/validate,"
    "/hypernodes/validate,/cronjobs/validate,/pods/validate,/pods/mutate"
)
TOPOLOGY_PLUGIN = "network-topology-aware"
# Arguments that place a component inside a Pod (mounted files, the Service, addresses); the
# same things are given here as files and loopback addresses.
PLACEMENT_FLAGS = (
    "--tls-cert-file", "--tls-private-key-file", "--ca-cert-file", "--admission-conf",
    "--webhook-namespace", "--webhook-service-name", "--scheduler-conf", "--leader-elect",
    "--leader-elect-resource-namespace", "--enable-pprof", "--port", "--listen-address",
    "--healthz-address", "--plugins-dir",
)  # fmt: skip


def find_components() -> Path:
    """``$TFGANG_REAL_COMPONENTS``, else what ``scripts/real-components`` builds or reuses."""
    folder = built_folder(COMPONENTS_ENV, BUILD_SCRIPT)
    binaries = ("kube-apiserver", "kube-controller-manager", "etcd", *VOLCANO_BINARIES)
    missing = [name for name in binaries if not os.access(folder / "bin" / name, os.X_OK)]
    if missing or not (folder / "volcano-chart" / "Chart.yaml").exists():
        raise RealApiServerError(f"{folder} lacks {', '.join(missing) or 'volcano-chart'}")
    return folder


def render_volcano(components: Path) -> list[dict[str, Any]]:
    """Volcano's chart of the pinned version, rendered as ``helm template`` would."""
    chart = helm_python.Chart.load(str(components / "volcano-chart"))
    values = {"custom": {"enabled_admissions": ADMISSIONS}}
    rendered = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True, revision=1)
    objects: list[dict[str, Any]] = []
    for path, text in sorted(rendered.items()):
        if path.endswith((".yaml", ".yml")):
            objects.extend(document for document in yaml.safe_load_all(text) if document)
    return objects


def _object(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for obj in objects:
        if obj.get("kind") == kind and obj["metadata"]["name"] == name:
            return obj
    raise RealApiServerError(f"Volcano's chart rendered no {kind} {name}")


def _container_args(objects: list[dict[str, Any]], deployment: str) -> list[str]:
    """The chart's arguments of a Deployment's container, less those that place it in a Pod."""
    spec = _object(objects, "Deployment", deployment)["spec"]["template"]["spec"]
    args = [str(arg) for arg in spec["containers"][0].get("args") or ()]
    return [arg for arg in args if arg.split("=", 1)[0] not in PLACEMENT_FLAGS]


def volcano_scheduler_conf(components: Path) -> str:
    """The chart's default scheduler configuration (``volcano-scheduler.conf``), with the
    ``network-topology-aware`` plugin added to its last tier: without it Volcano ignores a
    PodGroup's ``networkTopology``, so a cluster that uses the feature turns it on."""
    configmap = _object(render_volcano(components), "ConfigMap", "volcano-scheduler-configmap")
    data: dict[str, str] = configmap["data"]
    conf = yaml.safe_load(next(iter(data.values())))
    plugins = conf["tiers"][-1]["plugins"]
    if not any(plugin.get("name") == TOPOLOGY_PLUGIN for plugin in plugins):
        plugins.append({"name": TOPOLOGY_PLUGIN})
    return str(yaml.safe_dump(conf, sort_keys=False))


@dataclass
class RealVolcano:
    """Volcano's components on a started ``RealApiServer``; see the module docstring."""

    apiserver: RealApiServer
    components: Path
    scheduler_conf: str | None = None
    """The scheduler's configuration; the chart's default when not given."""
    startup_timeout: float = 120.0
    argv_prefix: tuple[str, ...] = ()
    """Put before each component's command (the one-node cluster's: run it in its namespace)."""
    component_kubeconfig: str = ""
    """The kubeconfig the components use; the API server's admin kubeconfig when not given."""
    workdir: Path = field(init=False, default=Path())
    webhook_url: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self._children: dict[str, ChildProcess] = {}

    @property
    def log_dir(self) -> Path:
        return self.apiserver.log_dir

    @property
    def scheduler_conf_path(self) -> Path:
        return self.workdir / "scheduler-conf" / "volcano-scheduler.conf"

    def start(self) -> None:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        self.workdir = self.apiserver.workdir / "volcano"
        self.workdir.mkdir(parents=True, exist_ok=True)
        objects = render_volcano(self.components)
        bin_dir = self.components / "bin"
        kubeconfig = self.component_kubeconfig or self.apiserver.kubeconfig

        crds = [obj for obj in objects if obj["kind"] == "CustomResourceDefinition"]
        crd_file = write_private_file(self.workdir / "crds.yaml", yaml.safe_dump_all(crds))
        self.apiserver.install_crd_file(str(crd_file))
        self.apiserver.apply_object(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
        for obj in objects:
            if obj["kind"] == "ConfigMap":
                self.apiserver.apply_object(obj)

        # vc-webhook-manager: a serving certificate for loopback, the chart's registrations by URL.
        ca = new_ca("volcano-admission-ca")
        serving = issue_serving_certificate(ca, ["localhost"], ip_addresses=["127.0.0.1"])
        pki = self.workdir / "admission"
        pki.mkdir(exist_ok=True)
        files = {
            "cert": write_private_file(pki / "tls.crt", serving.cert_pem),
            "key": write_private_file(pki / "tls.key", serving.key_pem),
            "ca": write_private_file(pki / "ca.crt", ca.cert_pem),
            "conf": write_private_file(
                pki / "volcano-admission.conf",
                next(iter(_object(objects, "ConfigMap", "volcano-admission-configmap")["data"].values())),
            ),
        }
        webhook_port = free_port()
        self.webhook_url = f"https://127.0.0.1:{webhook_port}"
        for obj in objects:
            if obj["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
                for webhook in obj["webhooks"]:
                    path = webhook["clientConfig"]["service"].get("path", "/")
                    webhook["clientConfig"] = {"url": self.webhook_url + path}
                self.apiserver.apply_object(obj)
        self._children["vc-webhook-manager"] = ChildProcess("vc-webhook-manager", [
            *self.argv_prefix, str(bin_dir / "vc-webhook-manager"),
            *_container_args(objects, "volcano-admission"),
            f"--kubeconfig={kubeconfig}", "--listen-address=127.0.0.1", f"--port={webhook_port}",
            f"--tls-cert-file={files['cert']}", f"--tls-private-key-file={files['key']}",
            f"--ca-cert-file={files['ca']}", f"--admission-conf={files['conf']}",
            f"--webhook-url={self.webhook_url}", f"--healthz-address=127.0.0.1:{free_port()}",
        ], self.log_dir / "vc-webhook-manager.log")  # fmt: skip
        self._children["vc-controller-manager"] = ChildProcess("vc-controller-manager", [
            *self.argv_prefix, str(bin_dir / "vc-controller-manager"),
            *_container_args(objects, "volcano-controllers"),
            f"--kubeconfig={kubeconfig}", "--leader-elect=false",
            f"--listen-address=127.0.0.1:{free_port()}", f"--healthz-address=127.0.0.1:{free_port()}",
        ], self.log_dir / "vc-controller-manager.log")  # fmt: skip
        self.scheduler_conf_path.parent.mkdir(exist_ok=True)
        self.set_scheduler_conf(self.scheduler_conf or volcano_scheduler_conf(self.components))
        self._children["vc-scheduler"] = ChildProcess("vc-scheduler", [
            *self.argv_prefix, str(bin_dir / "vc-scheduler"), *_container_args(objects, "volcano-scheduler"),
            f"--kubeconfig={kubeconfig}", "--leader-elect=false",
            f"--scheduler-conf={self.scheduler_conf_path}",
            f"--listen-address=127.0.0.1:{free_port()}", f"--healthz-address=127.0.0.1:{free_port()}",
        ], self.log_dir / "vc-scheduler.log")  # fmt: skip

        deadline = time.monotonic() + self.startup_timeout
        for name in ("vc-webhook-manager", "vc-controller-manager", "vc-scheduler"):
            self._children[name].start()
        self._wait(deadline, "the default queue to be open", lambda: self._queue_open("default"))
        self._wait(deadline, "Volcano's admission to answer", self._admission_answers)
        logger.info("Volcano running beside %s (logs in %s)", self.apiserver.url, self.log_dir)

    def set_scheduler_conf(self, conf: str) -> None:
        """Write the scheduler's configuration; a running scheduler reloads it."""
        temporary = self.scheduler_conf_path.with_name(".volcano-scheduler.conf.new")
        temporary.write_text(conf)
        temporary.replace(self.scheduler_conf_path)

    def stop(self) -> None:
        for name in ("vc-scheduler", "vc-controller-manager", "vc-webhook-manager"):
            child = self._children.get(name)
            if child is not None:
                child.stop(grace=10.0)

    def check(self) -> None:
        for name, child in self._children.items():
            if child.process is not None and not child.alive():
                code = child.process.returncode
                raise RealApiServerError(f"{name} exited with {code}; see {child.log_path}")

    def _wait(self, deadline: float, what: str, ready: Any) -> None:
        while not ready():
            self.check()
            if time.monotonic() > deadline:
                raise RealApiServerError(f"Volcano: no {what} in time; logs in {self.log_dir}")
            time.sleep(0.5)

    def _queue_open(self, name: str) -> bool:
        with contextlib.suppress(RealApiServerError):
            queue = json.loads(self.apiserver.run_kubectl("get", "queue", name, "-o", "json"))
            return bool((queue.get("status") or {}).get("state") == "Open")
        return False

    def _admission_answers(self) -> bool:
        """A dry-run PodGroup create passes through Volcano's validating webhook."""
        probe = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "tfgang-volcano-probe", "namespace": "default"},
            "spec": {"minMember": 1, "queue": "default"},
        }
        try:
            self.apiserver.run_kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(probe))
        except RealApiServerError as error:
            logger.debug("Volcano's admission not answering yet: %s", error)
            return False
        return True


@contextlib.contextmanager
def start_volcano(
    apiserver: RealApiServer, components: Path, scheduler_conf: str | None = None
) -> Iterator[RealVolcano]:
    volcano = RealVolcano(apiserver, components, scheduler_conf)
    volcano.start()
    try:
        yield volcano
    finally:
        volcano.stop()


@dataclass
class VolcanoCluster(RealApiServer):
    """kube-apiserver of the pinned release (with etcd and kube-controller-manager) and Volcano
    beside it: what tests ask of an API server, plus ``volcano``. Started and stopped as one."""

    components: Path = field(default_factory=Path)
    scheduler_conf: str | None = None
    volcano: RealVolcano = field(init=False)

    def start(self) -> None:
        super().start()
        self.volcano = RealVolcano(self, self.components, self.scheduler_conf)
        try:
            self.volcano.start()
        except BaseException:
            super().stop()
            raise

    def stop(self) -> None:
        volcano = self.__dict__.get("volcano")
        if volcano is not None:
            volcano.stop()
        super().stop()

    def check(self) -> None:
        super().check()
        self.volcano.check()


@contextlib.contextmanager
def start_volcano_cluster(
    components: Path | None = None,
    *,
    workdir: Path | None = None,
    port: int = 0,
    scheduler_conf: str | None = None,
) -> Iterator[VolcanoCluster]:
    folder = components or find_components()
    options = RealApiServerOptions(
        bin_dir=folder / "bin", workdir=workdir, port=port, install_volcano_crds=False
    )
    cluster = VolcanoCluster(options, components=folder, scheduler_conf=scheduler_conf)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m realcluster.volcano", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument(
        "--components", type=Path, help=f"the built folder (default: ${COMPONENTS_ENV} or the build)"
    )
    parser.add_argument("--workdir", type=Path, help="keep certificates, etcd data and logs here")
    parser.add_argument("--port", type=int, default=0, help="kube-apiserver's port (default: a free one)")
    parser.add_argument("--kubeconfig", type=Path, help="also copy the admin kubeconfig here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    started = start_volcano_cluster(args.components, workdir=args.workdir, port=args.port)
    return run_in_foreground(started, args.kubeconfig)


if __name__ == "__main__":
    sys.exit(main())
