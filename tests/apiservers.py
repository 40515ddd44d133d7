"""The three API servers the cluster-level suites run on, as pytest parameters: the sandbox's
own, a real kube-apiserver v1.20 with etcd (``realcluster.apiserver``), the oldest release
supported, and kube-apiserver v1.37 with the real Volcano installed beside it
(``realcluster.volcano``). Their marks select one: ``-m sandbox_apiserver``, ``-m kube_apiserver``
or ``-m volcano_apiserver``."""

from __future__ import annotations

import pytest

from sandbox.backends import KUBE_APISERVER, SANDBOX, VOLCANO

API_SERVERS = [
    pytest.param(SANDBOX, marks=pytest.mark.sandbox_apiserver),
    pytest.param(KUBE_APISERVER, marks=pytest.mark.kube_apiserver),
    pytest.param(VOLCANO, marks=pytest.mark.volcano_apiserver),
]
REAL_API_SERVERS = (KUBE_APISERVER, VOLCANO)


def apply_api_server_marks(config: pytest.Config, items: list[pytest.Item], parameter: str) -> None:
    """For the items parametrised over the API servers by ``parameter``:

    - ``needs_newer_kube(reason)``: a strict expected failure on kube-apiserver, so the run shows
      that the test does fail on v1.20, and says so the day it passes;
    - ``only_on_kube_apiserver(reason)``: the sandbox's variant is deselected, because the test
      needs what only a real server has (a persistent store, say); it runs on both real ones;
    - ``only_with_real_volcano(reason)``: runs on kube-apiserver v1.37 with the real Volcano alone,
      because it tests what only Volcano answers (its admission, its preemption's words).
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
        needs_real = item.get_closest_marker("only_on_kube_apiserver") is not None
        needs_volcano = item.get_closest_marker("only_with_real_volcano") is not None
        if (needs_real and kind not in REAL_API_SERVERS) or (needs_volcano and kind != VOLCANO):
            deselected.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item not in deselected]
