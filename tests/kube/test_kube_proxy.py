"""The environment's proxy for the API server, decided as kubectl (Go's httpproxy) decides it."""

from __future__ import annotations

import pytest

from kube.proxy import proxy_from_environment

PROXY = "http://proxy.corp:3128"


@pytest.mark.parametrize(
    ("server", "no_proxy", "proxied"),
    [
        ("https://10.1.2.3:6443", "", True),
        ("https://10.1.2.3:6443", "10.0.0.0/8", False),  # a CIDR
        ("https://11.1.2.3:6443", "10.0.0.0/8", True),
        ("https://[fd00::5]:6443", "fd00::/64", False),
        ("https://10.1.2.3:6443", "10.1.2.3", False),  # an address
        ("https://10.1.2.3:6443", "10.1.2.3:443", True),  # an address on another port
        ("https://api.corp:6443", "api.corp", False),  # a host and its subdomains
        ("https://k8s.api.corp:6443", "api.corp", False),
        ("https://notapi.corp:6443", "api.corp", True),
        ("https://api.corp:6443", ".api.corp", True),  # subdomains only
        ("https://k8s.api.corp:6443", "*.api.corp", False),
        ("https://api.corp:6443", "api.corp:6443", False),
        ("https://api.corp:6443", "api.corp:443", True),
        ("https://API.Corp:6443", " other , api.corp ", False),
        ("https://api.corp:6443", "*", False),
        ("https://127.0.0.1:6443", "", False),  # loopback and localhost are never proxied
        ("https://localhost:6443", "", False),
        ("https://[::1]:6443", "", False),
    ],
)
def test_no_proxy_as_kubectl_reads_it(server: str, no_proxy: str, proxied: bool) -> None:
    environ = {"HTTPS_PROXY": PROXY, "NO_PROXY": no_proxy}
    assert proxy_from_environment(server, environ) == (PROXY if proxied else None)


def test_which_variables_are_read() -> None:
    assert proxy_from_environment("https://10.1.2.3", {}) is None
    assert proxy_from_environment("https://10.1.2.3", {"https_proxy": "proxy:3128"}) == "http://proxy:3128"
    assert proxy_from_environment("https://10.1.2.3", {"HTTP_PROXY": PROXY}) is None  # http servers only
    assert proxy_from_environment("http://10.1.2.3", {"http_proxy": PROXY}) == PROXY
    both = {"HTTPS_PROXY": PROXY, "https_proxy": "http://other:1", "no_proxy": "10.1.2.3", "NO_PROXY": "x"}
    assert proxy_from_environment("https://10.1.2.3", both) == PROXY  # the upper-case names first
