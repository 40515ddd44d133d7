"""The chart's deployment, run for real on the sandbox: its objects, its environment, its RBAC.

A sandbox cluster (API server, Volcano-like scheduler, node agent) gets the chart's objects applied
with kubectl. The webhook (one replica) and the controller (two replicas, leader-elected) then run
as the real console scripts the Deployments name, with exactly the Deployments' environment (only
ports, the certificate directory and a kubeconfig are changed, since there is no cluster network
or service-account token here), each under its ServiceAccount's user name. The webhook runs in the
default selfManaged mode: it creates its Secret and injects the caBundle into the chart's webhook
configurations, and the API server reaches it through the chart's Service.

A small TFJob then runs to completion and is cleaned up (cleanPodPolicy All,
ttlSecondsAfterFinished 0). Every request the two components made, from the API server's request
log, must be allowed by the chart's roles, and every grant must be used, apart from the few that
only rare paths need.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from realcluster.ports import free_port
from sandbox.apiserver.admission import ServiceRoute
from sandbox.cluster import ClusterHandle, ClusterOptions, child_environment, start_cluster
from tests import polling

from .rbac import Grant, granted, matching_grants
from .render import find_object, render_chart

NAMESPACE = "tfgang"
JOB_NAMESPACE = "ml"
REPO = Path(__file__).resolve().parents[2]
VENV_KUBECTL = REPO / ".venv" / "bin" / "kubectl"
KUBECTL = str(VENV_KUBECTL) if VENV_KUBECTL.exists() else "kubectl"
LEASE = "1ca428e5.training-operator.kubeflow.org"

# Grants that a short, clean run may legitimately leave unused, with the path that needs them.
RARE_PATH_GRANTS = {
    # re-reading an object whose create found it already there (a restart mid-reconcile)
    Grant("*", "", "pods", "get", ""),
    Grant("*", "", "services", "get", ""),
    Grant("*", "scheduling.volcano.sh", "podgroups", "get", ""),
    # a PodGroup spec change (replicas or minAvailable edited while the job runs)
    Grant("*", "scheduling.volcano.sh", "podgroups", "patch", ""),
    # aggregating a repeated event into count and lastTimestamp
    Grant("*", "", "events", "patch", ""),
    # renewing the serving certificate before it expires
    Grant(NAMESPACE, "", "secrets", "update", "tfgang-webhook-tls"),
    # a pod admitted before the webhook's TFJob watch delivered its job
    Grant("*", "kubeflow.org", "tfjobs", "get", ""),
}

TFJOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": {"name": "chart-smoke", "namespace": JOB_NAMESPACE},
    "spec": {
        "runPolicy": {"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 0},
        "tfReplicaSpecs": {
            role: {
                "replicas": 1,
                "restartPolicy": "Never",
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "tensorflow",
                                "image": "busybox",
                                "command": ["sh", "-c", "sleep 1"],
                                "resources": {"limits": {"cpu": "1", "memory": "100Mi"}},
                            }
                        ]
                    }
                },
            }
            for role in ("PS", "Worker")
        },
    },
}



def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None, check: bool = True) -> str:
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=60,
        env={**os.environ, "KUBECTL_KUBERC": "false"},
        check=False,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def wait_for(condition: Callable[[], bool], what: str, timeout: float, processes: list[Component]) -> None:
    """``tests.polling.wait_for``, failing at once when a component exits, with the logs either way."""

    def alive_and_done() -> bool:
        for component in processes:
            if component.process.poll() is not None:
                raise AssertionError(
                    f"{component.name} exited while waiting for {what}:\n{component.log_tail()}"
                )
        return condition()

    try:
        polling.wait_for(alive_and_done, what, timeout, interval=0.2)
    except AssertionError as error:
        logs = "\n".join(component.log_tail() for component in processes)
        raise AssertionError(f"{error}\n{logs}") from None


def http_ok(port: int) -> bool:
    with (
        contextlib.suppress(OSError),
        urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r,
    ):
        return bool(r.status == 200)
    return False


@dataclass
class Component:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    ops_port: int

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"--- {self.name} ---\n" + "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def container_of(objects: list[dict[str, Any]], deployment: str) -> dict[str, Any]:
    [container] = find_object(objects, "Deployment", deployment)["spec"]["template"]["spec"]["containers"]
    return dict(container)


def deployment_environment(container: dict[str, Any]) -> dict[str, str]:
    environment = {}
    for variable in container["env"]:
        if "value" in variable:
            environment[variable["name"]] = variable["value"]
        else:
            assert variable["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
            environment[variable["name"]] = NAMESPACE
    return environment


def service_account_kubeconfig(cluster: ClusterHandle, account: str, workdir: Path) -> str:
    groups = ("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}", "system:authenticated")
    user = f"system:serviceaccount:{NAMESPACE}:{account}"
    return str(cluster.call(cluster.cluster.identity_kubeconfig(account, user, groups)))


def route_service(cluster: ClusterHandle, name: str, port: int) -> None:
    server = cluster.cluster.sandbox_server

    async def route() -> None:
        server.state.admission.service_routes[(NAMESPACE, name)] = ServiceRoute("127.0.0.1", port)

    cluster.call(route())


def start_component(
    name: str, container: dict[str, Any], overrides: dict[str, str], workdir: Path
) -> Component:
    ops_port = free_port()
    environment = {
        **child_environment(),
        **deployment_environment(container),
        "TFGANG_OPS_PORT": str(ops_port),
        **overrides,
    }
    [script] = container["command"]
    log = workdir / f"{name}.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / script)],
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    return Component(name, process, log, ops_port)


@dataclass
class Deployed:
    cluster: ClusterHandle
    objects: list[dict[str, Any]]
    components: list[Component]


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    workdir = tmp_path_factory.mktemp("chart-deployment")
    options = ClusterOptions(
        operator=False, workdir=workdir / "cluster", backoff_base=1.0, scheduler_period=0.2
    )
    objects = render_chart(None, NAMESPACE, include_tests=False, include_crds=True)
    components: list[Component] = []
    with start_cluster(options) as cluster:
        try:
            namespaces = [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                for name in (NAMESPACE, JOB_NAMESPACE)
            ]
            # No Deployments: this test runs their containers itself.
            applied = [o for o in objects if o["kind"] != "Deployment"]
            kubectl(cluster.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(namespaces + applied))

            webhook_port = free_port()
            route_service(cluster, "tfgang-webhook", webhook_port)
            webhook = start_component(
                "webhook",
                container_of(objects, "tfgang-webhook"),
                {
                    "TFGANG_KUBECONFIG": service_account_kubeconfig(cluster, "tfgang-webhook", workdir),
                    "TFGANG_HOST": "127.0.0.1",
                    "TFGANG_PORT": str(webhook_port),
                    "TFGANG_CERT_DIR": str(workdir / "webhook-certs"),
                    "TFGANG_SHUTDOWN_DELAY": "0",
                },
                workdir,
            )
            components.append(webhook)

            controller_kubeconfig = service_account_kubeconfig(cluster, "tfgang-controller", workdir)
            for replica in ("a", "b"):
                controller = start_component(
                    f"controller-{replica}",
                    container_of(objects, "tfgang-controller"),
                    {
                        "TFGANG_KUBECONFIG": controller_kubeconfig,
                        "TFGANG_OPS_HOST": "127.0.0.1",
                        "TFGANG_IDENTITY": f"controller-{replica}",
                    },
                    workdir,
                )
                components.append(controller)
            ops_ports = [component.ops_port for component in components]
            wait_for(
                lambda: all(http_ok(port) for port in ops_ports),
                "every component to be ready",
                60,
                components,
            )
            yield Deployed(cluster, objects, components)
        finally:
            for component in components:
                component.stop()


def test_webhook_manages_its_certificate_and_the_charts_webhook_configurations(deployed: Deployed) -> None:
    kubeconfig = deployed.cluster.kubeconfig
    secret = json.loads(
        kubectl(kubeconfig, "get", "secret", "tfgang-webhook-tls", "-n", NAMESPACE, "-o", "json")
    )
    ca = base64.b64decode(secret["data"]["ca.crt"])
    for kind, name in (
        ("mutatingwebhookconfiguration", "tfgang-mutating"),
        ("validatingwebhookconfiguration", "tfgang-validating"),
    ):
        stored = json.loads(kubectl(kubeconfig, "get", kind, name, "-o", "json"))
        [webhook] = stored["webhooks"]
        assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == ca
        assert webhook["clientConfig"]["service"]["name"] == "tfgang-webhook"


def test_a_tfjob_runs_through_the_charts_webhooks_and_leader_elected_controller(deployed: Deployed) -> None:
    kubeconfig = deployed.cluster.kubeconfig

    def lease_holder() -> str:
        found = kubectl(kubeconfig, "get", "lease", LEASE, "-n", NAMESPACE, "-o", "json", check=False)
        return str(json.loads(found)["spec"].get("holderIdentity") or "") if found else ""

    wait_for(lambda: bool(lease_holder()), "a controller to take the lease", 60, deployed.components)
    assert lease_holder() in ("controller-a", "controller-b")

    invalid = json.loads(json.dumps(TFJOB))
    invalid["metadata"]["name"] = "dotted.name"  # a valid object name, but not a DNS-1035 label
    refused = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "create", "-f", "-"],
        input=json.dumps(invalid),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KUBECTL_KUBERC": "false"},
        check=False,
    )
    assert refused.returncode != 0
    assert "validate-tfjobs.tfgang.kubeflow.org" in refused.stderr or "denied" in refused.stderr

    kubectl(kubeconfig, "create", "-f", "-", stdin=json.dumps(TFJOB))

    def gone() -> bool:
        result = kubectl(kubeconfig, "get", "tfjobs", "-n", JOB_NAMESPACE, "-o", "name", check=False)
        return "chart-smoke" not in result

    # Succeeded, cleaned up (cleanPodPolicy All) and deleted (ttlSecondsAfterFinished 0).
    wait_for(gone, "the TFJob to succeed and be deleted", 90, deployed.components)
    pods = kubectl(kubeconfig, "get", "pods", "-n", JOB_NAMESPACE, "-o", "name")
    assert pods.strip() == ""


def _requests_by(deployed: Deployed, account: str) -> set[tuple[str, str, str, str, str]]:
    user = f"system:serviceaccount:{NAMESPACE}:{account}"
    requests = set()
    for record in deployed.cluster.request_log():
        if record.user != user:
            continue
        resource = f"{record.resource}/{record.subresource}" if record.subresource else record.resource
        requests.add((record.verb, record.group, resource, record.namespace, record.name))
    return requests


def _all_requests_by(deployed: Deployed, account: str) -> set[tuple[str, str, str, str, str]]:
    """The account's requests once its processes are gone: a watch is logged when it ends."""
    for component in deployed.components:
        component.stop()
    requests = _requests_by(deployed, account)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        time.sleep(0.5)
        latest = _requests_by(deployed, account)
        if latest == requests and any(verb == "watch" for verb, *_ in latest):
            break
        requests = latest
    return requests


@pytest.mark.parametrize("account", ["tfgang-controller", "tfgang-webhook"])
def test_every_request_is_allowed_and_every_grant_used(deployed: Deployed, account: str) -> None:
    # runs last in this module: the log holds a whole job's lifetime, and the components stop here
    grants = granted(deployed.objects, account)
    requests = _all_requests_by(deployed, account)
    assert requests
    used: set[Grant] = set()
    denied = []
    for verb, group, resource, namespace, name in requests:
        matches = matching_grants(
            grants, verb=verb, group=group, resource=resource, namespace=namespace, name=name
        )
        if not matches:
            denied.append((verb, group, resource, namespace, name))
        used.update(matches)
    assert denied == [], f"{account} made requests its roles do not allow"
    unused = grants - used - RARE_PATH_GRANTS
    assert unused == set(), f"{account} has grants nothing used"
