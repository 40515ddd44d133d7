"""The two API servers the cluster-level suites run on, as pytest parameters: the sandbox's own
and a real kube-apiserver v1.20 with etcd (``sandbox.realapiserver``). Their marks select one:
``-m sandbox_apiserver`` or ``-m kube_apiserver``."""

from __future__ import annotations

import pytest

from sandbox.backends import KUBE_APISERVER, SANDBOX

API_SERVERS = [
    pytest.param(SANDBOX, marks=pytest.mark.sandbox_apiserver),
    pytest.param(KUBE_APISERVER, marks=pytest.mark.kube_apiserver),
]


def mark_what_v1_20_lacks(items: list[pytest.Item], parameter: str) -> None:
    """``needs_newer_kube(reason)``: a strict expected failure where ``parameter`` is
    kube-apiserver, so the run shows that the test does fail on v1.20 and says so if it passes."""
    for item in items:
        mark = item.get_closest_marker("needs_newer_kube")
        callspec = getattr(item, "callspec", None)
        if mark is not None and callspec is not None and callspec.params.get(parameter) == KUBE_APISERVER:
            reason = mark.args[0] if mark.args else mark.kwargs.get("reason", "")
            item.add_marker(pytest.mark.xfail(reason=f"kube-apiserver v1.20 lacks {reason}", strict=True))
