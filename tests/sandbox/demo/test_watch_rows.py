"""Reading kubectl's watch rows back, from its padded output and from the transcript's collapsed copy."""

from __future__ import annotations

import pytest

from sandbox.watchrows import RowError, is_header, parse_pod_row, parse_podgroup_row, parse_tfjob_row


def test_a_tfjob_row_without_a_state_has_an_empty_state() -> None:
    assert parse_tfjob_row("tftest           0s").state == ""
    assert parse_tfjob_row("tftest 0s").state == ""
    assert parse_tfjob_row("tftest   Succeeded   35s").state == "Succeeded"


def test_podgroup_rows_with_empty_status_and_runnings() -> None:
    fresh = parse_podgroup_row("tftest            4                      0s    default")
    assert (fresh.status, fresh.min_member, fresh.runnings, fresh.queue) == ("", 4, 0, "default")
    running = parse_podgroup_row("tftest Running 4 1 35s default")
    assert (running.status, running.min_member, running.runnings, running.age) == ("Running", 4, 1, "35s")
    admitted = parse_podgroup_row("tftest Inqueue 4 1s default")
    assert (admitted.status, admitted.runnings) == ("Inqueue", 0)


def test_pod_rows_with_and_without_the_last_restart_time() -> None:
    row = parse_pod_row(
        "tftest-worker-0   0/1     CrashLoopBackOff    1 (14s ago)   36s   192.168.221.140   las1   "
        "<none>   <none>"
    )
    assert (row.status, row.restarts, row.last_restart, row.age, row.node) == (
        "CrashLoopBackOff",
        1,
        "14s ago",
        "36s",
        "las1",
    )
    pending = parse_pod_row("tftest-ps-0 0/1 Pending 0 0s <none> <none> <none> <none>")
    assert (pending.status, pending.restarts, pending.ip, pending.node) == ("Pending", 0, "<none>", "<none>")
    later = parse_pod_row("tftest-ps-0 0/1 CrashLoopBackOff 4 (16s ago) 3m3s 10.0.0.1 las1 <none> <none>")
    assert (later.restarts, later.age) == (4, "3m3s")


@pytest.mark.parametrize(
    ("parser", "line"),
    [
        (parse_tfjob_row, "tftest Running"),
        (parse_tfjob_row, "结论 TFJob 的状态与所有 Worker 的状态相关"),
        (parse_podgroup_row, "tftest Running four 3s default"),
        (parse_pod_row, "tftest-ps-0 0/1 Running 1 (3s 33s 10.0.0.1 las1"),
        (parse_pod_row, "$ kubectl get po -owide -w"),
        (parse_pod_row, ""),
    ],
)
def test_lines_that_are_not_rows_are_refused(parser: object, line: str) -> None:
    with pytest.raises(RowError):
        parser(line)  # type: ignore[operator]


def test_headers_are_recognised() -> None:
    assert is_header("NAME STATUS MINMEMBER RUNNINGS AGE QUEUE")
    assert not is_header("tftest 0s")
