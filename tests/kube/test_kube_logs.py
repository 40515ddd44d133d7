"""JSON log lines carry the fields bound in the current context, and only those."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator

import pytest

from kube.logs import (
    bind_log_fields,
    configure_json_logging,
    current_log_fields,
    log_fields,
    reset_log_fields,
)


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    stream = io.StringIO()
    configure_json_logging("DEBUG", stream=stream)
    yield stream
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved_handlers:
        root.addHandler(handler)
    root.setLevel(saved_level)


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_records_are_json_with_standard_fields(log_stream: io.StringIO) -> None:
    logging.getLogger("tfgang.test").info("hello %s", "world", extra={"extra_field": 7})
    (record,) = [r for r in lines(log_stream) if r["logger"] == "tfgang.test"]
    assert record["message"] == "hello world"
    assert record["level"] == "INFO"
    assert record["logger"] == "tfgang.test"
    assert record["extra_field"] == 7
    assert "time" in record


def test_context_fields_attach_and_nest(log_stream: io.StringIO) -> None:
    log = logging.getLogger("tfgang.test")
    with log_fields(job="ns/mnist"):
        log.info("outer")
        with log_fields(replica="worker-0"):
            log.info("inner")
        log.info("outer again")
    log.info("outside")
    outer, inner, outer_again, outside = [r for r in lines(log_stream) if r["logger"] == "tfgang.test"]
    assert outer["job"] == "ns/mnist" and "replica" not in outer
    assert inner["job"] == "ns/mnist" and inner["replica"] == "worker-0"
    assert "replica" not in outer_again
    assert "job" not in outside
    assert current_log_fields() == {}


def test_bind_and_reset_without_a_with_block() -> None:
    token = bind_log_fields(review_uid="u-1")
    assert current_log_fields() == {"review_uid": "u-1"}
    reset_log_fields(token)
    assert current_log_fields() == {}


async def test_concurrent_tasks_keep_their_own_fields(log_stream: io.StringIO) -> None:
    log = logging.getLogger("tfgang.test")

    async def reconcile(job: str) -> None:
        with log_fields(job=job):
            await asyncio.sleep(0.001)
            log.info("reconciled")

    await asyncio.gather(*(reconcile(f"ns/job-{i}") for i in range(5)))
    reconciled = [r for r in lines(log_stream) if r["message"] == "reconciled"]
    assert sorted(str(r["job"]) for r in reconciled) == [f"ns/job-{i}" for i in range(5)]


def test_unknown_level_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown log level"):
        configure_json_logging("LOUD", stream=io.StringIO())
