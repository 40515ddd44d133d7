"""Fixtures shared by the webhook tests."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from kube.logs import configure_json_logging


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """The process's log as the webhook writes it in production (JSON lines, DEBUG and up)."""
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    stream = io.StringIO()
    configure_json_logging("DEBUG", stream=stream)
    try:
        yield stream
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved_handlers:
            root.addHandler(handler)
        root.setLevel(saved_level)
