"""Every fixture sent to the real HTTPS server on loopback; the whole response envelope compared."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from tests.webhook.admission_cases import AdmissionCase, decoded_envelope, load_cases
from tests.webhook.webhook_harness import client_context, make_cert_dir, running_webhook

CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_fixture_over_tls(case: AdmissionCase, tmp_path: Path) -> None:
    ca = make_cert_dir(tmp_path)
    async with (
        running_webhook(tmp_path, case.tfjobs, case.settings) as webhook,
        aiohttp.ClientSession() as session,
        session.post(webhook.url + case.endpoint, json=case.review, ssl=client_context(ca)) as response,
    ):
        assert response.status == 200
        assert response.content_type == "application/json"
        envelope = await response.json()
    assert decoded_envelope(envelope) == case.expected_envelope()
    if "patch" in envelope["response"]:
        assert isinstance(envelope["response"]["patch"], str)  # base64, as the API server requires


async def test_untrusted_client_fails_the_handshake(tmp_path: Path) -> None:
    make_cert_dir(tmp_path)
    other_ca = make_cert_dir(tmp_path / "other")
    async with running_webhook(tmp_path) as webhook, aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.post(webhook.url + "/validate-tfjobs", json={}, ssl=client_context(other_ca))
