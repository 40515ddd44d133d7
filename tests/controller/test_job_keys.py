"""Which job a watched child belongs to."""

from __future__ import annotations

from controller.resources import job_key_of_child, job_label_index


def test_controller_owner_reference_names_the_job() -> None:
    child = {
        "metadata": {
            "namespace": "ns",
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "TFJob",
                    "name": "train",
                    "uid": "u",
                    "controller": True,
                },
            ],
            "labels": {"training.kubeflow.org/job-name": "other"},
        }
    }
    assert job_key_of_child(child) == "ns/train"


def test_label_is_the_fallback_without_a_controller_reference() -> None:
    child = {"metadata": {"namespace": "ns", "labels": {"training.kubeflow.org/job-name": "train"}}}
    assert job_key_of_child(child) == "ns/train"
    assert job_label_index(child) == ["ns/train"]


def test_a_child_controlled_by_something_else_maps_to_no_job() -> None:
    child = {
        "metadata": {
            "namespace": "ns",
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "x", "uid": "u", "controller": True},
            ],
            "labels": {"training.kubeflow.org/job-name": "train"},
        }
    }
    assert job_key_of_child(child) is None


def test_objects_without_namespace_or_labels_map_to_nothing() -> None:
    assert job_key_of_child({"metadata": {"name": "x"}}) is None
    assert job_label_index({"metadata": {"namespace": "ns"}}) == []
