"""``kubectl tfjob status`` at every stage of a job's life, against golden output.

Each ``stages/<stage>.json`` holds what ``read_status`` reads (the TFJob, its pods, its PodGroup or
``null``, its events) and the moment it was read, captured from ``tfgang-sandbox up --operator``
with the real controller, webhook, gang scheduler and node agent (managedFields dropped). ``created``
is the ``running`` job as the API server stores it before the controller's first status write.
``stages/<stage>.txt`` is the text output and ``stages/<stage>.yaml`` the ``-o yaml`` output.

After a deliberate change of the output, rewrite the goldens with
``TFGANG_UPDATE_GOLDENS=1 python -m pytest tests/kubectl_tfjob/test_status_stages.py`` and read the diff.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_tfjob.render import as_data, status_text
from kubectl_tfjob.status import JobStatusView, job_status
from kubeobjects.times import parse_time
from tfjob.settings import Settings

STAGES_DIR = Path(__file__).parent / "stages"
STAGES = (
    "created",
    "waiting",
    "running",
    "restarting",
    "suspended",
    "succeeded",
    "failed-backoff",
    "failed-deadline",
    "failed-schedule-timeout",
)
UPDATE = os.environ.get("TFGANG_UPDATE_GOLDENS") == "1"
SECTION_HEADERS = {"Conditions:", "Replicas:", "Pods:", "Events:"}


def _view(stage: str) -> JobStatusView:
    captured: dict[str, Any] = json.loads((STAGES_DIR / f"{stage}.json").read_text())
    now = parse_time(captured["now"])
    assert isinstance(now, datetime)
    return job_status(
        captured["job"], captured["pods"], captured["podGroup"], captured["events"], Settings(), now
    )


def _golden(path: Path, actual: str) -> str:
    if UPDATE:
        path.write_text(actual)
    return path.read_text()


def test_every_stage_has_its_inputs_and_goldens() -> None:
    for stage in STAGES:
        for suffix in ("json", "txt", "yaml"):
            assert (STAGES_DIR / f"{stage}.{suffix}").is_file(), f"{stage}.{suffix}"


@pytest.mark.parametrize("stage", STAGES)
def test_text_matches_the_golden(stage: str) -> None:
    text = status_text(_view(stage))
    assert text == _golden(STAGES_DIR / f"{stage}.txt", text)


@pytest.mark.parametrize("stage", STAGES)
def test_yaml_matches_the_golden(stage: str) -> None:
    data = as_data(_view(stage), "yaml")
    assert data == _golden(STAGES_DIR / f"{stage}.yaml", data)


@pytest.mark.parametrize("stage", STAGES)
def test_no_placeholder_and_no_line_ending_in_a_colon(stage: str) -> None:
    text = status_text(_view(stage))
    assert "<none" not in text and "<no " not in text
    dangling = [line for line in text.splitlines() if line.endswith(":") and line not in SECTION_HEADERS]
    assert dangling == []


def _podgroup_line(stage: str) -> str:
    return next(line for line in status_text(_view(stage)).splitlines() if line.startswith("PodGroup "))


def test_a_new_job_says_the_controller_has_not_written_its_status() -> None:
    text = status_text(_view("created"))
    assert text.startswith("TFJob default/run: no condition yet (the controller has not written")
    assert "  none yet" in text
    assert "  PS: 1 wanted; not counted yet" in text
    assert _podgroup_line("created") == (
        "PodGroup run: not created yet (the controller creates it before any pod)"
    )


def test_a_waiting_gang_says_why_it_waits() -> None:
    view = _view("waiting")
    assert (view["gang"]["phase"], view["gang"]["admitted"]) == ("Pending", False)
    text = status_text(view)
    gang_line = "PodGroup wait2: phase Pending, minMember 3, queue default (waiting for the gang scheduler)"
    assert gang_line in text
    assert re.search(r"schedule timeout: 600s, at \S+ \(\d+s left\)", text), text
    assert "Not running yet: PodGroup wait2 is Pending (Unschedulable): " in text
    assert "Warning PodGroupPending TFJob/wait2" in text


def test_a_finished_job_says_its_podgroup_was_deleted() -> None:
    for stage in ("succeeded", "failed-backoff", "failed-deadline", "failed-schedule-timeout"):
        view = _view(stage)
        assert view["gang"]["absence"] == "DeletedWhenFinished", stage
        assert _podgroup_line(stage).endswith(": deleted when the job finished"), stage
        assert "completionTime" in view, stage


def test_a_suspended_job_says_its_podgroup_comes_back_on_resume() -> None:
    assert _view("suspended")["gang"]["absence"] == "DeletedWhileSuspended"
    assert "created again on resume" in _podgroup_line("suspended")


def test_an_unset_backoff_limit_is_named_as_unlimited() -> None:
    view = _view("running")
    assert view["restarts"]["backoffLimit"] is None
    assert "Restarts: 0 (no backoffLimit set: restarts are not limited)" in status_text(view)
    assert "Restarts: 2 of backoffLimit 4" in status_text(_view("restarting"))
    assert "Restarts: no longer counted, the job has finished (backoffLimit 1)" in status_text(
        _view("failed-backoff")
    )


def test_the_failures_name_their_cause() -> None:
    assert "reached the specified backoff limit" in status_text(_view("failed-backoff"))
    assert "longer than specified deadline" in status_text(_view("failed-deadline"))
    assert "TFJobScheduleTimeout" in status_text(_view("failed-schedule-timeout"))


def test_the_data_output_keeps_every_field_it_had() -> None:
    """``-o yaml|json`` is an interface: fields are added, never renamed or dropped."""
    view: Any = _view("waiting")
    fields = {"namespace", "name", "state", "conditions", "replicaStatuses", "restarts", "pods", "events"}
    assert fields | {"gang"} <= set(view)
    assert set(view["restarts"]) == {"counted", "backoffLimit"}
    gang_fields = {"podGroup", "exists", "phase", "admitted", "conditions", "minMember", "queue"}
    assert gang_fields | {"scheduleTimeout"} <= set(view["gang"])
    assert set(view["gang"]["scheduleTimeout"]) == {"seconds", "at", "remaining"}
    running: Any = _view("running")
    assert set(running["pods"][0]) == {"name", "phase", "restarts", "node"}
    assert set(running["events"][0]) == {"type", "reason", "object", "count", "lastTimestamp", "message"}
    assert yaml.safe_load(as_data(running, "yaml")) == json.loads(as_data(running, "json"))
