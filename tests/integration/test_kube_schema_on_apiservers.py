"""kube.schema against the API servers: a custom resource of a test CRD that uses every keyword
kube.schema handles gets, from the sandbox, from a real kube-apiserver v1.20 and from v1.37, the
causes kube.schema gives it for that release (``Release``: v1.20's answers on v1.20, the current
release's on the others), word for word (in any order), and when accepted is stored as kube.schema
decodes it. (Field names avoid YAML 1.1's booleans such as ``n``: the CRD goes through kubectl.)"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.client.exceptions import ApiException

from kube.schema import Release, StructuralSchema
from tests.kube.test_kube_schema import SCHEMA, resource

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "things.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA}}],
    },
}

SPECS: list[dict[str, Any]] = [
    {},
    {"size": "3"},
    {"size": -1},
    {"size": 11},
    {"ratio": 0},
    {"mode": "Medium"},
    {"name": "abcdef"},
    {"name": "a"},
    {"name": "A1"},
    {"tags": ["a", "b", "c"]},
    {"tags": ["a", None]},
    {"items": []},
    {"items": [{"weight": 2}]},
    {"byName": {"a": {}, "b": {}, "c": {}}},
    {"byName": {"x": None}},
    {"paused": "yes"},
    {"paused": None},
    {"note": 5},
    {"note": None},
    {"when": "yesterday"},
    {"when": "2026-12-03T13:00:00.5+01:00"},
    {"count": 2**40},
    {"count": True},
    {"size": 1.5},
    {"when": 5},
    {"when": ["2026-12-03T13:00:00Z"]},
    {"limits": {"cpu": 2, "memory": "500m"}},
    {"limits": {"cpu": "lots"}},
    {"limits": {"cpu": 1.5}},
    {"limits": {"cpu": True}},
    {"size": 3.0},
    {"size": None},
    {"surprise": 1, "items": [{"id": "a", "extra": True}], "byName": {"x": {"num": 1, "m": 2}}},
    {
        "embedded": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"a": "x", "b": 1},
            "c": 2,
        }
    },
    {"open": {"a": None}, "typedOpen": {"known": None, "free": {"x": None}}},
    {"size": "x", "mode": "Medium", "name": "abcdef"},
]


@pytest.fixture
async def things(apiserver: Any, tmp_path: Path) -> AsyncIterator[client.CustomObjectsApi]:
    crd_file = tmp_path / "things.yaml"
    crd_file.write_text(yaml.safe_dump(CRD))
    apiserver.install_crd_file(str(crd_file))
    configuration = Configuration()
    await config.load_kube_config(config_file=str(apiserver.kubeconfig), client_configuration=configuration)
    async with ApiClient(configuration=configuration) as api_client:
        yield client.CustomObjectsApi(api_client)


async def test_the_api_server_answers_as_kube_schema_says(
    things: client.CustomObjectsApi, release: Release
) -> None:
    structural = StructuralSchema(SCHEMA, release=release)
    differences = []
    for index, spec in enumerate(SPECS):
        body = resource(**spec)
        body["metadata"]["name"] = f"thing-{index}"
        expected = structural.admit(body)
        causes = [{"reason": e.kind.reason, "message": e.body, "field": e.path} for e in expected.errors]
        try:
            stored = await things.create_namespaced_custom_object(
                "example.com", "v1", "default", "things", body, dry_run="All"
            )
        except ApiException as refused:
            answered = json.loads(refused.body).get("details", {}).get("causes")
            # kube-apiserver's order is not fixed (Go map order); the sandbox sorts them by field.
            if sorted(answered or [], key=json.dumps) != sorted(causes, key=json.dumps):
                differences.append(f"{spec}: the server says {answered}, kube.schema {causes}")
            continue
        if causes or stored["spec"] != expected.object["spec"]:
            differences.append(
                f"{spec}: stored {stored['spec']}, kube.schema {expected.object['spec']} {causes}"
            )
    assert differences == [], "\n".join(differences)
