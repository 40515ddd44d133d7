"""Where container output is kept and how much of it `kubectl logs` gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.kubelet.logstore import LogNotFound, LogStore, tail


def test_tail() -> None:
    data = b"a\nb\nc\n"
    assert (tail(data, None), tail(data, 2), tail(data, 0), tail(data, 10)) == (data, b"b\nc\n", b"", data)


def test_current_and_previous_instances(tmp_path: Path) -> None:
    store = LogStore(tmp_path)
    store.register_pod("ns", "p", "uid", ["main"])
    with pytest.raises(LogNotFound, match="is waiting to start: ContainerCreating"):
        store.locate("ns", "p", "main")
    first = store.new_instance("uid", "ns", "p", "main", 0)
    first.write_bytes(b"one\n")
    store.instance_ended("uid", "main")
    with pytest.raises(LogNotFound, match="previous terminated container"):
        store.locate("ns", "p", "main", previous=True)
    second = store.new_instance("uid", "ns", "p", "main", 1)

    assert store.locate("ns", "p", "main").path == second
    assert store.locate("ns", "p", "main").live
    assert store.locate("ns", "p", "main", previous=True).path == first
    with pytest.raises(LogNotFound, match='container "other" in pod "p" is not valid'):
        store.locate("ns", "p", "other")

    store.forget("ns", "p", "uid")
    assert not first.exists()
    with pytest.raises(LogNotFound, match="not running on this node"):
        store.locate("ns", "p", "main")
