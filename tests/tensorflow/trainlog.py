"""Reading the TensorFlow example's log as its tests and benchmark do, without TensorFlow.

The example prints ``[train] event=... key=value ...`` lines (``examples/tensorflow/progress.py``,
loaded from there so that the program and its readers share one format). A log may hold several
runs of the program (a container restarted in place, or logs of a gang before and after a
restart put one after the other): each run opens with its ``cluster`` line.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "tensorflow"


@cache
def progress_module() -> ModuleType:
    """``examples/tensorflow/progress.py``: the example is not a package, so it is loaded by path."""
    spec = importlib.util.spec_from_file_location("tfgang_example_progress", EXAMPLE_DIR / "progress.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def progress_events(text: str) -> list[dict[str, str]]:
    """The progress lines of a log, parsed, in order; every other line is left out."""
    parse = progress_module().parse_line
    return [fields for line in text.splitlines() if (fields := parse(line)) is not None]


@dataclass(frozen=True)
class Epoch:
    number: int
    loss: float
    accuracy: float
    time: float


@dataclass
class Run:
    """One run of the program, from its ``cluster`` line on."""

    task_type: str
    task_index: str
    cluster: dict[str, list[str]]
    first_epoch: int | None = None
    resumed: bool | None = None
    started: float | None = None  # the cluster line's time
    first_step: float | None = None
    epochs: list[Epoch] = field(default_factory=list)
    test_accuracy: float | None = None
    epochs_run: int | None = None

    @property
    def finished(self) -> bool:
        return self.test_accuracy is not None

    @property
    def last_epoch(self) -> int | None:
        return self.epochs[-1].number if self.epochs else None


def runs(text: str) -> list[Run]:
    """The runs of the program in a log (lines before the first ``cluster`` line are ignored)."""
    found: list[Run] = []
    for event in progress_events(text):
        kind = event["event"]
        if kind == "cluster":
            found.append(
                Run(
                    task_type=event["task_type"],
                    task_index=event["task_index"],
                    cluster=json.loads(event["cluster"]),
                    started=float(event["time"]),
                )
            )
            continue
        if not found:
            continue
        run = found[-1]
        if kind == "start":
            run.first_epoch = int(event["first_epoch"])
            run.resumed = event["resumed"] == "true"
        elif kind == "first_step":
            run.first_step = float(event["time"])
        elif kind == "epoch":
            run.epochs.append(
                Epoch(
                    int(event["epoch"]), float(event["loss"]), float(event["accuracy"]), float(event["time"])
                )
            )
        elif kind == "done":
            run.test_accuracy = float(event["test_accuracy"])
            run.epochs_run = int(event["epochs_run"])
    return found


def epochs_run_twice(before: Run, after: Run) -> list[int]:
    """The epochs ``after`` trained that ``before`` had finished already.

    A restart resumes from the last epoch saved. The replica that saves (the chief) prints an
    epoch after saving it, so for it the list is empty; another replica may print an epoch whose
    save the chief did not finish before it was killed, so at most the one interrupted epoch may
    appear here."""
    finished = {epoch.number for epoch in before.epochs}
    return sorted(finished & {epoch.number for epoch in after.epochs})
