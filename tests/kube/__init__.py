"""Tests of the generic Kubernetes machinery in kube/."""
