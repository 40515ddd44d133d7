"""Real kubectl against the sandbox API server: apply, get, delete."""

from __future__ import annotations

import base64
import json

import yaml

from sandbox.testing import ApiServerHandle
from tests.sandbox.apiserver.conftest import Kubectl


def test_apply_creates_then_updates_the_seed_tfjob(kubectl: Kubectl, seed_yaml: str) -> None:
    first = kubectl.run("apply", "-f", seed_yaml)
    assert first.stdout.strip() == "tfjob.kubeflow.org/tftest created"
    again = kubectl.run("apply", "-f", seed_yaml)
    assert again.stdout.strip() == "tfjob.kubeflow.org/tftest unchanged"
    with open(seed_yaml) as handle:
        changed = yaml.safe_load(handle)
    changed["spec"]["runPolicy"]["backoffLimit"] = 5
    updated = kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(changed))
    assert updated.stdout.strip() == "tfjob.kubeflow.org/tftest configured"
    shown = yaml.safe_load(kubectl.run("get", "tfjob", "tftest", "-o", "yaml").stdout)
    assert shown["spec"]["runPolicy"]["backoffLimit"] == 5
    assert shown["metadata"]["generation"] == 2
    kubectl.run("delete", "tfjob", "tftest")


def test_get_tfjob_prints_the_crd_columns(kubectl: Kubectl, seed_yaml: str) -> None:
    kubectl.run("apply", "-f", seed_yaml)
    lines = kubectl.run("get", "tfjob", "-o", "wide").stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "AGE"]
    assert lines[1].split()[0] == "tftest" and len(lines[1].split()) == 2
    kubectl.run("delete", "tfjob", "tftest", "--wait")
    assert "No resources found" in kubectl.run("get", "tfjob").stderr


def test_unauthenticated_calls_get_401(api: ApiServerHandle, kubectl: Kubectl) -> None:
    _token, path = api.add_user("someone")
    assert Kubectl(path, kubectl.cache_dir).run("get", "ns").returncode == 0
    stranger = Kubectl(kubectl.kubeconfig, kubectl.cache_dir)
    result = stranger.run("--token", "wrong", "get", "pods", check=False)
    assert result.returncode != 0
    assert "Unauthorized" in result.stderr


def test_kubectl_create_generators_send_protobuf_the_sandbox_decodes(kubectl: Kubectl) -> None:
    kubectl.run("create", "namespace", "generated")
    kubectl.run("-n", "generated", "create", "configmap", "settings", "--from-literal=mode=fast")
    kubectl.run("-n", "generated", "create", "secret", "generic", "token", "--from-literal=key=s3cret")
    kubectl.run("-n", "generated", "create", "serviceaccount", "runner")
    configmap = json.loads(kubectl.run("-n", "generated", "get", "cm", "settings", "-o", "json").stdout)
    assert configmap["data"] == {"mode": "fast"}
    secret = json.loads(kubectl.run("-n", "generated", "get", "secret", "token", "-o", "json").stdout)
    assert secret["type"] == "Opaque" and base64.b64decode(secret["data"]["key"]) == b"s3cret"
    accounts = kubectl.run("-n", "generated", "get", "sa", "-o", "name").stdout.split()
    assert accounts == ["serviceaccount/default", "serviceaccount/runner"]
    refused = kubectl.run("create", "deployment", "web", "--image=busybox", check=False)
    assert refused.returncode != 0 and "unknown format" in refused.stderr
    kubectl.run("delete", "namespace", "generated", "--wait=false")
