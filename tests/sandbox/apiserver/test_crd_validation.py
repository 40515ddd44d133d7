"""CRD structural-schema validation, pruning, defaulting and the immutability rule."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from kube.schema import UNCHECKED_RULES
from tests.sandbox.apiserver.conftest import Kubectl

TFJOBS = {"group": "kubeflow.org", "version": "v1", "namespace": "default", "plural": "tfjobs"}
PODGROUPS = {
    "group": "scheduling.volcano.sh",
    "version": "v1beta1",
    "namespace": "default",
    "plural": "podgroups",
}


def tfjob(name: str, **spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "tensorflow", "image": "busybox"}]}}
    body = {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": template}}, **spec}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name}, "spec": body}


async def test_type_and_enum_errors_are_422_with_field_causes(api_client: ApiClient) -> None:
    custom = client.CustomObjectsApi(api_client)
    body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "bad"},
        "spec": {"minMember": "four", "queue": "Not_A_Name"},
        "status": {"phase": "Failed"},
    }
    with pytest.raises(ApiException) as invalid:
        await custom.create_namespaced_custom_object(body=body, **PODGROUPS)
    assert invalid.value.status == 422
    status = json.loads(invalid.value.body)
    assert status["reason"] == "Invalid"
    assert status["details"] == {
        "name": "bad",
        "group": "scheduling.volcano.sh",
        "kind": "PodGroup",
        "causes": [
            {
                "reason": "FieldValueTypeInvalid",
                "message": 'Invalid value: "string": spec.minMember in body must be of type integer: '
                '"string"',
                "field": "spec.minMember",
            },
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "Not_A_Name": spec.queue in body should match '
                "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'",
                "field": "spec.queue",
            },
            {
                "reason": "FieldValueNotSupported",
                "message": 'Unsupported value: "Failed": supported values: "Pending", "Running", "Unknown", '
                '"Inqueue", "Completed"',
                "field": "status.phase",
            },
        ],
    }
    assert status["message"].startswith('PodGroup.scheduling.volcano.sh "bad" is invalid: [spec.minMember: ')


async def test_required_and_minimum(api_client: ApiClient) -> None:
    custom = client.CustomObjectsApi(api_client)
    body = tfjob("required")
    del body["spec"]["tfReplicaSpecs"]
    with pytest.raises(ApiException) as invalid:
        await custom.create_namespaced_custom_object(body=body, **TFJOBS)
    causes = json.loads(invalid.value.body)["details"]["causes"]
    assert causes == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.tfReplicaSpecs"},
        # The TFJob CRD has a CEL rule, which a blocking error leaves unchecked (kube-apiserver v1.37).
        {
            "reason": "FieldValueInvalid",
            "message": f"Invalid value: null: {UNCHECKED_RULES}",
            "field": "<nil>",
        },
    ]
    negative = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "neg"},
        "spec": {"minMember": -1},
    }
    with pytest.raises(ApiException) as below:
        await custom.create_namespaced_custom_object(body=negative, **PODGROUPS)
    assert json.loads(below.value.body)["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: -1: spec.minMember in body should be greater than or equal to 0",
            "field": "spec.minMember",
        }
    ]


async def test_unknown_fields_are_pruned_or_refused_by_field_validation(api_client: ApiClient) -> None:
    custom = client.CustomObjectsApi(api_client)
    body = tfjob("pruned")
    body["spec"]["surprise"] = True
    created = await custom.create_namespaced_custom_object(body=body, **TFJOBS)
    assert "surprise" not in created["spec"]
    strict = tfjob("strict")
    strict["spec"]["surprise"] = True
    with pytest.raises(ApiException) as refused:
        await custom.create_namespaced_custom_object(body=strict, field_validation="Strict", **TFJOBS)
    assert refused.value.status == 400
    assert json.loads(refused.value.body)["message"] == 'strict decoding error: unknown field "spec.surprise"'
    await custom.delete_namespaced_custom_object(name="pruned", **TFJOBS)


async def test_transition_rule_keeps_the_queue_immutable(api_client: ApiClient) -> None:
    custom = client.CustomObjectsApi(api_client)
    await custom.create_namespaced_custom_object(
        body=tfjob("queued", runPolicy={"schedulingPolicy": {"queue": "default"}}), **TFJOBS
    )
    with pytest.raises(ApiException) as invalid:
        await custom.patch_namespaced_custom_object(
            name="queued",
            body={"spec": {"runPolicy": {"schedulingPolicy": {"queue": "other"}}}},
            _content_type="application/merge-patch+json",
            **TFJOBS,
        )
    assert invalid.value.status == 422
    cause = json.loads(invalid.value.body)["details"]["causes"][0]
    assert cause["field"] == "spec.runPolicy.schedulingPolicy.queue"
    assert cause["message"] == 'Invalid value: "string": spec.runPolicy.schedulingPolicy.queue is immutable'
    await custom.delete_namespaced_custom_object(name="queued", **TFJOBS)


async def test_update_without_resource_version_is_invalid_for_custom_resources(api_client: ApiClient) -> None:
    custom = client.CustomObjectsApi(api_client)
    await custom.create_namespaced_custom_object(body=tfjob("unconditional"), **TFJOBS)
    with pytest.raises(ApiException) as invalid:
        await custom.replace_namespaced_custom_object(
            name="unconditional", body=tfjob("unconditional"), **TFJOBS
        )
    assert invalid.value.status == 422
    assert "metadata.resourceVersion: Invalid value: 0: must be specified for an update" in invalid.value.body
    await custom.delete_namespaced_custom_object(name="unconditional", **TFJOBS)


def test_kubectl_shows_the_invalid_error(kubectl: Kubectl) -> None:
    body = tfjob("kubectl-invalid", runPolicy={"backoffLimit": "three"})
    result = kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(body), check=False)
    assert result.returncode != 0
    assert result.stderr.strip() == (
        'The TFJob "kubectl-invalid" is invalid: \n'
        '* spec.runPolicy.backoffLimit: Invalid value: "string": spec.runPolicy.backoffLimit in body must be '
        'of type integer: "string"\n'
        f"* <nil>: Invalid value: null: {UNCHECKED_RULES}"
    )


def test_invalid_pod_name(kubectl: Kubectl) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "Bad_Name"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    result = kubectl.run("create", "-f", "-", stdin=json.dumps(pod), check=False)
    assert result.returncode != 0
    assert (
        'The Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 '
        "subdomain must consist of" in result.stderr
    )
