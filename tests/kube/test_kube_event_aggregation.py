"""Event aggregation bookkeeping: repeats fold into one Event whose count grows."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kube.events import EventAggregator, event_key, event_name

T0 = datetime.datetime(2026, 11, 29, 12, 0, 0, tzinfo=datetime.UTC)
JOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": {"name": "mnist", "namespace": "ns", "uid": "u1"},
}


def test_repeats_before_a_write_fold_into_one_create() -> None:
    agg = EventAggregator()
    k = event_key(JOB, "Normal", "R", "m")
    for i in range(3):
        agg.observe(k, T0 + datetime.timedelta(seconds=i))
    write = agg.next_write()
    assert write is not None
    assert write.count == 3
    assert write.existing_name is None
    assert write.first_seen == T0 and write.last_seen == T0 + datetime.timedelta(seconds=2)
    assert agg.next_write() is None


def test_repeats_after_a_write_patch_the_same_event_with_a_growing_count() -> None:
    agg = EventAggregator()
    k = event_key(JOB, "Warning", "R", "m")
    agg.observe(k, T0)
    first = agg.next_write()
    assert first is not None
    agg.written(first, "mnist.abc", "ns")
    agg.observe(k, T0 + datetime.timedelta(seconds=5))
    agg.observe(k, T0 + datetime.timedelta(seconds=9))
    second = agg.next_write()
    assert second is not None
    assert (second.existing_name, second.existing_namespace, second.count) == ("mnist.abc", "ns", 3)
    assert second.first_seen == T0


def test_different_messages_or_objects_are_different_events() -> None:
    agg = EventAggregator()
    agg.observe(event_key(JOB, "Normal", "R", "one"), T0)
    agg.observe(event_key(JOB, "Normal", "R", "two"), T0)
    other = {**JOB, "metadata": {**JOB["metadata"], "name": "other", "uid": "u2"}}
    agg.observe(event_key(other, "Normal", "R", "one"), T0)
    assert len(agg) == 3
    counts = []
    while (write := agg.next_write()) is not None:
        counts.append(write.count)
    assert counts == [1, 1, 1]


def test_a_lost_event_is_created_again_with_the_full_count() -> None:
    agg = EventAggregator()
    k = event_key(JOB, "Normal", "R", "m")
    agg.observe(k, T0)
    write = agg.next_write()
    assert write is not None
    agg.written(write, "mnist.1", "ns")
    agg.observe(k, T0)
    write = agg.next_write()
    assert write is not None and write.existing_name == "mnist.1"
    agg.lost(write)  # the patch found no Event: the recorder creates a new one with write.count
    assert write.count == 2
    agg.written(write, "mnist.2", "ns")
    agg.observe(k, T0)
    again = agg.next_write()
    assert again is not None and again.existing_name == "mnist.2" and again.count == 3


def test_a_failed_write_drops_its_occurrences_but_not_the_series() -> None:
    agg = EventAggregator()
    k = event_key(JOB, "Normal", "R", "m")
    agg.observe(k, T0)
    assert agg.next_write() is not None  # ...and the write fails: written() is never called
    agg.observe(k, T0)
    write = agg.next_write()
    assert write is not None and write.existing_name is None and write.count == 1


def test_a_write_to_retry_keeps_its_occurrences_for_the_next_write_first() -> None:
    agg = EventAggregator()
    first, other = event_key(JOB, "Normal", "R", "m"), event_key(JOB, "Normal", "R", "other")
    agg.observe(first, T0)
    agg.observe(first, T0)
    failed = agg.next_write()
    assert failed is not None and failed.count == 2
    agg.observe(other, T0)
    agg.observe(first, T0)
    agg.retry(failed)
    again = agg.next_write()
    assert again is not None and again.key == first and again.count == 3
    agg.written(again, "job.1", "default")
    agg.observe(first, T0)
    later = agg.next_write()
    assert later is not None and later.key == other
    patch = agg.next_write()
    assert patch is not None and patch.existing_name == "job.1" and patch.count == 4


def test_least_recently_seen_series_are_evicted() -> None:
    agg = EventAggregator(max_tracked=2)
    for message in ["a", "b", "c"]:
        agg.observe(event_key(JOB, "Normal", "R", message), T0)
    assert agg.tracked == 2
    assert len(agg) == 2


def test_event_key_requires_kind_and_name_and_truncates_long_messages() -> None:
    with pytest.raises(ValueError, match="kind"):
        event_key({"metadata": {"name": "x"}}, "Normal", "R", "m")
    assert len(event_key(JOB, "Normal", "R", "x" * 5000).message) == 1024
    # an object reference (no metadata) works too
    ref = event_key({"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "ns"}, "Normal", "R", "m")
    assert (ref.kind, ref.name, ref.namespace) == ("Pod", "p", "ns")


def test_event_names_are_unique_per_time_and_carry_the_object_name() -> None:
    a = event_name("mnist", T0)
    b = event_name("mnist", T0 + datetime.timedelta(microseconds=1))
    assert a.startswith("mnist.") and a != b


def test_event_names_stay_within_the_name_length_limit() -> None:
    name = event_name("x" * 253, T0)
    later = event_name("x" * 253, T0 + datetime.timedelta(seconds=1))
    assert len(name) == 253 and name.startswith("xxx") and name != later
