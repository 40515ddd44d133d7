"""Admission decisions are logged as JSON lines carrying the review uid (as in production)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import aiohttp
import pytest

from tests.webhook.admission_cases import load_cases
from tests.webhook.webhook_harness import client_context, make_cert_dir, running_webhook


@pytest.mark.parametrize(
    "name",
    ["mutate-tfjob-not-found", "mutate-user-tf-config", "mutate-seed-ps-0", "validate-create-several-errors"],
)
async def test_each_decision_is_one_json_line_with_the_uid(
    json_log: io.StringIO, tmp_path: Path, name: str
) -> None:
    case = load_cases(name)[0]
    ca = make_cert_dir(tmp_path)
    async with (
        running_webhook(tmp_path, case.tfjobs, case.settings) as webhook,
        aiohttp.ClientSession() as session,
        session.post(webhook.url + case.endpoint, json=case.review, ssl=client_context(ca)) as response,
    ):
        assert response.status == 200
        answer = await response.json()
    records = [json.loads(line) for line in json_log.getvalue().splitlines()]
    decisions = [record for record in records if record.get("logger") == "webhook.app"]
    assert len(decisions) == 1, records
    record = decisions[0]
    uid = case.review["request"]["uid"]
    assert record["uid"] == uid and answer["response"]["uid"] == uid
    assert record["operation"] == case.review["request"]["operation"]
    assert record["allowed"] is case.expected["allowed"]
    assert record["level"] == (
        "DEBUG" if case.expected["allowed"] and not case.expected["warnings"] else "INFO"
    )
