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


def apply_api_server_marks(config: pytest.Config, items: list[pytest.Item], parameter: str) -> None:
    """For the items parametrised over the API servers by ``parameter``:

    - ``needs_newer_kube(reason)``: a strict expected failure on kube-apiserver, so the run shows
      that the test does fail on v1.20, and says so the day it passes;
    - ``only_on_kube_apiserver(reason)``: the sandbox's variant is deselected, because the test
      needs what only a real server has (a persistent store, say).
    """
    deselected = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        kind = callspec.params.get(parameter) if callspec is not None else None
        if kind is None:
            continue
        lacking = item.get_closest_marker("needs_newer_kube")
        if lacking is not None and kind == KUBE_APISERVER:
            reason = lacking.args[0] if lacking.args else lacking.kwargs.get("reason", "")
            item.add_marker(pytest.mark.xfail(reason=f"kube-apiserver v1.20 lacks {reason}", strict=True))
        if item.get_closest_marker("only_on_kube_apiserver") is not None and kind != KUBE_APISERVER:
            deselected.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item not in deselected]
