"""Named values sets the chart tests render: the defaults, each certificate mode, namespace scope."""

from __future__ import annotations

from typing import Any

# A real (throwaway) base64 PEM is not needed: the chart only checks that a bundle is given.
USER_CA_BUNDLE = "TFMwdExTMUNSVWRKVGlCRFJWSlVTVVpKUTBGVVJTMHRMUzB0Q2c9PQ=="

SCENARIOS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "cert-manager": {"certs": {"mode": "certManager"}},
    "cert-manager-cluster-issuer": {
        "certs": {
            "mode": "certManager",
            "certManager": {"issuerRef": {"name": "ca", "kind": "ClusterIssuer"}},
        }
    },
    "user-secret": {"certs": {"mode": "secret", "secretName": "my-webhook-tls", "caBundle": USER_CA_BUNDLE}},
    "namespace-scoped": {"watchNamespaces": ["team-a"]},
    "everything-on": {
        "metrics": {
            "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
            "grafanaDashboard": {"enabled": True},
            "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}},
        },
        "webhook": {
            "replicas": 3,
            "priorityClassName": "system-cluster-critical",
            "podAntiAffinity": "required",
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "ops", "effect": "NoSchedule"}
            ],
            "excludedNamespaces": ["monitoring"],
            "namespaceSelectorExpressions": [
                {"key": "tfgang.kubeflow.org/webhook", "operator": "NotIn", "values": ["disabled"]}
            ],
            "podDisruptionBudget": {"enabled": True, "minAvailable": "50%"},
        },
        "controller": {"priorityClassName": "system-cluster-critical", "podAntiAffinity": "none"},
        "imagePullSecrets": ["regcred"],
        "image": {"repository": "example/tfgang", "digest": "sha256:" + "a" * 64},
        "commonLabels": {"team": "ml-platform"},
    },
    "minimal": {
        "controller": {"leaderElection": {"enabled": False}, "replicas": 1},
        "webhook": {"replicas": 1},
        "metrics": {"service": {"enabled": False}},
        "helmTest": {"enabled": False},
    },
}
