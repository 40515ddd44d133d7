"""The environment the chart gives each container is understood by that component's real flag parser.

The Deployments configure the components only through ``TFGANG_*`` variables, so a renamed flag
would otherwise go unnoticed until a pod starts with the wrong settings.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.config import build_parser as build_controller_parser
from controller.config import parse_config as parse_controller_config
from webhook.config import build_parser as build_webhook_parser
from webhook.config import parse_config as parse_webhook_config
from webhook.connections import ConnectionLimits

from .render import find_object, render_chart
from .scenarios import SCENARIOS

NAMESPACE = "tfgang"


def container_environment(objects: list[dict[str, Any]], deployment: str) -> dict[str, str]:
    """The container's variables as the kubelet would set them (downward API resolved)."""
    pod = find_object(objects, "Deployment", deployment)["spec"]["template"]["spec"]
    [container] = pod["containers"]
    environment: dict[str, str] = {}
    for variable in container["env"]:
        if "value" in variable:
            environment[variable["name"]] = variable["value"]
        elif variable["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace":
            environment[variable["name"]] = NAMESPACE
        else:
            raise AssertionError(f"unexpected valueFrom in {variable}")
    return environment


def _flag_variables(component: str) -> set[str]:
    """The ``TFGANG_*`` names of the component's flags, so a variable naming no flag is caught."""
    parser = build_controller_parser({}) if component == "controller" else build_webhook_parser()
    return {"TFGANG_" + action.dest.upper() for action in parser._actions if action.option_strings}


@pytest.mark.parametrize("scenario", ["defaults", "namespace-scoped", "minimal"])
def test_controller_environment_parses_into_the_intended_configuration(scenario: str) -> None:
    values = SCENARIOS[scenario]
    environment = container_environment(render_chart(values, NAMESPACE), "tfgang-controller")
    assert set(environment) - {"POD_NAMESPACE"} <= _flag_variables("controller")
    config = parse_controller_config([], environment)
    assert config.ops_port == 8082
    assert config.namespace == (values.get("watchNamespaces") or [""])[0]
    assert config.settings.gang_scheduler_name == "volcano"
    assert config.workers == 4
    if scenario == "minimal":
        assert config.leader_election is None
    else:
        assert config.leader_election is not None
        assert config.leader_election.namespace == NAMESPACE
        assert config.leader_election.name == "1ca428e5.training-operator.kubeflow.org"


@pytest.mark.parametrize("scenario", ["defaults", "cert-manager", "user-secret", "namespace-scoped"])
def test_webhook_environment_parses_into_the_intended_configuration(scenario: str) -> None:
    values = SCENARIOS[scenario]
    environment = container_environment(render_chart(values, NAMESPACE), "tfgang-webhook")
    assert set(environment) - {"POD_NAMESPACE"} <= _flag_variables("webhook")
    config = parse_webhook_config([], environment)
    assert config.cert_dir == "/var/run/tfgang/certs"
    assert (config.port, config.ops_port) == (9443, 8081)
    assert config.namespace == (values.get("watchNamespaces") or [None])[0]
    assert config.shutdown_delay == 5.0
    assert config.settings.gang_scheduler_name == "volcano"
    if scenario in ("defaults", "namespace-scoped"):
        assert config.self_managed is not None
        assert config.self_managed.secret == "tfgang-webhook-tls"
        assert config.self_managed.secret_namespace == NAMESPACE
        assert config.self_managed.service == "tfgang-webhook"
        assert config.self_managed.mutating_webhook_configurations == ("tfgang-mutating",)
        assert config.self_managed.validating_webhook_configurations == ("tfgang-validating",)
    else:
        assert config.self_managed is None


def test_cluster_domain_reaches_both_components() -> None:
    objects = render_chart({"clusterDomain": "cluster.local"}, NAMESPACE)
    webhook = parse_webhook_config([], container_environment(objects, "tfgang-webhook"))
    controller = parse_controller_config([], container_environment(objects, "tfgang-controller"))
    assert webhook.settings.cluster_domain == controller.settings.cluster_domain == "cluster.local"


def test_webhook_connection_limits_reach_the_webhook() -> None:
    defaults = parse_webhook_config([], container_environment(render_chart({}, NAMESPACE), "tfgang-webhook"))
    assert defaults.limits == ConnectionLimits()
    values = {
        "webhook": {
            "connections": {
                "idleTimeoutSeconds": 300,
                "headerTimeoutSeconds": 3,
                "bodyTimeoutSeconds": 4.5,
                "handshakeTimeoutSeconds": 6,
                "maxConnections": 50,
                "maxHeaderBytes": 4096,
                "maxHeaders": 32,
                "maxInflightBodyBytes": 64 * 1024 * 1024,
            }
        }
    }
    config = parse_webhook_config(
        [], container_environment(render_chart(values, NAMESPACE), "tfgang-webhook")
    )
    assert config.limits == ConnectionLimits(
        idle_timeout=300.0,
        header_timeout=3.0,
        body_timeout=4.5,
        handshake_timeout=6.0,
        max_connections=50,
        max_header_bytes=4096,
        max_headers=32,
        max_inflight_body_bytes=64 * 1024 * 1024,
    )


def test_a_client_ca_is_mounted_and_reaches_the_webhook() -> None:
    objects = render_chart({"webhook": {"clientCA": {"configMapName": "apiserver-clients"}}}, NAMESPACE)
    config = parse_webhook_config([], container_environment(objects, "tfgang-webhook"))
    assert config.client_ca == "/var/run/tfgang/client-ca/ca.crt"
    pod = find_object(objects, "Deployment", "tfgang-webhook")["spec"]["template"]["spec"]
    [volume] = [v for v in pod["volumes"] if v["name"] == "client-ca"]
    assert volume["configMap"]["name"] == "apiserver-clients"
    [mount] = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "client-ca"]
    assert mount["mountPath"] == "/var/run/tfgang/client-ca"
    default = parse_webhook_config([], container_environment(render_chart({}, NAMESPACE), "tfgang-webhook"))
    assert default.client_ca is None
