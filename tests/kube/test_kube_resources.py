"""Resource paths address exactly the REST URLs the Kubernetes API serves."""

from __future__ import annotations

import pytest

from kube.resources import CRDS, LEASES, NODES, PODGROUPS_V1BETA1, PODS, QUEUES_V1BETA1, Resource


def test_core_group_paths_live_under_api_v1() -> None:
    assert PODS.api_version == "v1"
    assert PODS.path() == "/api/v1/pods"
    assert PODS.path("ns") == "/api/v1/namespaces/ns/pods"
    assert PODS.path("ns", "p-0") == "/api/v1/namespaces/ns/pods/p-0"
    assert PODS.path("ns", "p-0", "status") == "/api/v1/namespaces/ns/pods/p-0/status"


def test_named_group_paths_live_under_apis() -> None:
    assert LEASES.api_version == "coordination.k8s.io/v1"
    assert PODGROUPS_V1BETA1.path("team") == "/apis/scheduling.volcano.sh/v1beta1/namespaces/team/podgroups"
    assert CRDS.path(name="tfjobs.kubeflow.org") == (
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tfjobs.kubeflow.org"
    )


def test_cluster_scoped_resources_take_no_namespace() -> None:
    assert NODES.path(name="las1", subresource="status") == "/api/v1/nodes/las1/status"
    assert QUEUES_V1BETA1.path(name="default") == "/apis/scheduling.volcano.sh/v1beta1/queues/default"
    with pytest.raises(ValueError, match="cluster-scoped"):
        NODES.path("ns", "las1")


def test_bad_paths_are_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="needs a namespace"):
        PODS.path(name="p")
    with pytest.raises(ValueError, match="needs an object name"):
        PODS.path("ns", subresource="status")
    with pytest.raises(ValueError, match="invalid name"):
        PODS.path("ns", "a/b")
    with pytest.raises(ValueError, match="invalid namespace"):
        PODS.path("..")
    with pytest.raises(ValueError, match="invalid name"):
        PODS.path("ns", "..")


def test_segments_outside_rfc_1123_are_percent_encoded_and_names_are_kept_as_they_are() -> None:
    assert PODS.path("ns", "a b?c#d%e") == "/api/v1/namespaces/ns/pods/a%20b%3Fc%23d%25e"
    assert PODS.path("ns", "ünï") == "/api/v1/namespaces/ns/pods/%C3%BCn%C3%AF"
    assert PODS.path("team-a.b", "Job_1~x") == "/api/v1/namespaces/team-a.b/pods/Job_1~x"


def test_custom_resource_and_str() -> None:
    tfjobs = Resource("kubeflow.org", "v1", "tfjobs", "TFJob")
    assert tfjobs.path("default", "mnist", "status") == (
        "/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist/status"
    )
    assert str(tfjobs) == "tfjobs.kubeflow.org"
    assert str(PODS) == "pods"
