"""Every rendered object is valid for every Kubernetes minor the chart supports (kubernetes-validate).

kubernetes-validate bundles the built-in API schemas of each minor, so this catches wrong types,
unknown fields (strict mode) and APIs missing in older minors. Custom resources have no bundled
schema: the TFJob the helm test creates is checked against the chart's own CRD; cert-manager's
Issuer and Certificate and prometheus-operator's ServiceMonitor and PrometheusRule are third-party
CRDs whose schemas are not available offline, so they are skipped here (their fields are asserted in
the certificate, metrics and monitoring tests; promtool checks the rules).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import kubernetes_validate
import pytest
import yaml
from packaging.version import Version

from tfjob.validation import validate_create

from .render import chart_crds, find_object, load_chart, render_chart
from .scenarios import SCENARIOS

THIRD_PARTY_CUSTOM_RESOURCES = {
    ("cert-manager.io/v1", "Issuer"),
    ("cert-manager.io/v1", "Certificate"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
}


def supported_minors() -> list[str]:
    """From the chart's kubeVersion lower bound to the newest minor kubernetes-validate knows."""
    match = re.match(r">=\s*(\d+\.\d+)", load_chart().metadata["kubeVersion"])
    assert match, "Chart.yaml kubeVersion needs a >= lower bound"
    lowest = Version(match.group(1))
    minors = {".".join(v.split(".")[:2]) for v in kubernetes_validate.utils.all_versions()}
    return sorted((m for m in minors if Version(m) >= lowest), key=Version)


@functools.cache
def distinct_objects() -> tuple[dict[str, Any], ...]:
    """Every object any scenario renders, plus the CRDs, each distinct object once."""
    seen: dict[str, dict[str, Any]] = {}
    for values in SCENARIOS.values():
        for obj in render_chart(values, "tfgang", include_crds=True):
            # objects differing only in their labels (a string map) add nothing to validate
            unlabelled = {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "labels"}}
            seen.setdefault(json.dumps(unlabelled, sort_keys=True), obj)
    return tuple(seen.values())


def test_the_supported_range_covers_old_and_new_minors() -> None:
    minors = supported_minors()
    assert minors[0] == "1.25"
    assert Version(minors[-1]) >= Version("1.37")


@pytest.mark.parametrize("minor", supported_minors())
def test_rendered_objects_are_valid_for_each_supported_minor(minor: str) -> None:
    skipped = set()
    for obj in distinct_objects():
        try:
            kubernetes_validate.validate(obj, minor, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            skipped.add((obj["apiVersion"], obj["kind"]))
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{obj['kind']}/{obj['metadata']['name']} invalid for {minor}: {error.message}")
    # only the known third-party custom resources may lack a bundled schema
    assert skipped == THIRD_PARTY_CUSTOM_RESOURCES


def test_the_validator_does_catch_a_wrong_type() -> None:
    webhook = find_object(render_chart(), "MutatingWebhookConfiguration")
    webhook["webhooks"][0]["timeoutSeconds"] = "5"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(webhook, supported_minors()[-1], strict=True)


def test_the_helm_test_tfjob_matches_the_charts_crd_schema() -> None:
    [crd] = [c for c in chart_crds() if c["spec"]["names"]["kind"] == "TFJob"]
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema = version["schema"]["openAPIV3Schema"]
    config_map = find_object(render_chart(), "ConfigMap", "tfgang-test")
    tfjob = yaml.safe_load(config_map["data"]["tfjob.yaml"])
    assert (tfjob["apiVersion"], tfjob["kind"]) == (f"{crd['spec']['group']}/v1", "TFJob")
    jsonschema.validate(tfjob, schema)
    assert validate_create(tfjob) == []  # the validating webhook's own rules accept it too
    broken = json.loads(json.dumps(tfjob))
    broken["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "one"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
