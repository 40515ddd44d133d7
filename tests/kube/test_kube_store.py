"""The store keeps objects by key and keeps its secondary indexes exact through every change."""

from __future__ import annotations

from typing import Any

import pytest

from kube.store import Store, by_label, by_owner_uid, object_key, split_key


def pod(name: str, ns: str = "default", *, owner: str | None = None, job: str | None = None,
        rv: str = "1") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": ns, "resourceVersion": rv}
    if owner:
        metadata["ownerReferences"] = [
            {"uid": "not-the-controller", "controller": False},
            {"uid": owner, "controller": True},
        ]
    if job:
        metadata["labels"] = {"job-name": job}
    return {"metadata": metadata}


def test_keys() -> None:
    assert object_key(pod("a", "ns")) == "ns/a"
    assert object_key({"metadata": {"name": "las1"}}) == "las1"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("las1") == (None, "las1")
    with pytest.raises(ValueError, match=r"metadata\.name"):
        object_key({"metadata": {}})


def test_upsert_get_delete() -> None:
    store = Store()
    assert store.upsert(pod("a")) is None
    newer = pod("a", rv="2")
    old = store.upsert(newer)
    assert old is not None and old["metadata"]["resourceVersion"] == "1"
    assert store.get("default/a") is newer
    assert "default/a" in store and len(store) == 1
    assert store.delete("default/a") is newer
    assert store.delete("default/a") is None
    assert store.get("default/a") is None and len(store) == 0


def test_indexes_follow_updates_and_deletes() -> None:
    store = Store()
    store.add_index("owner", by_owner_uid)
    store.add_index("job", by_label("job-name"))
    store.upsert(pod("a", owner="u1", job="j1"))
    store.upsert(pod("b", owner="u1", job="j1"))
    store.upsert(pod("c", owner="u2"))
    assert store.index_keys("owner", "u1") == ["default/a", "default/b"]
    assert store.index_keys("owner", "not-the-controller") == []
    assert [object_key(o) for o in store.by_index("job", "j1")] == ["default/a", "default/b"]

    store.upsert(pod("a", owner="u2", job="j2"))  # a moves to another owner and job
    assert store.index_keys("owner", "u1") == ["default/b"]
    assert store.index_keys("owner", "u2") == ["default/a", "default/c"]
    assert store.index_keys("job", "j2") == ["default/a"]

    store.delete("default/b")
    assert store.by_index("owner", "u1") == []
    assert store.by_index("job", "j1") == []


def test_index_added_late_covers_existing_objects() -> None:
    store = Store()
    store.upsert(pod("a", job="j"))
    store.add_index("job", by_label("job-name"))
    assert store.index_keys("job", "j") == ["default/a"]
    with pytest.raises(ValueError, match="already exists"):
        store.add_index("job", by_label("x"))
    with pytest.raises(KeyError, match="no index"):
        store.by_index("nope", "x")


def test_replace_returns_previous_contents_and_rebuilds_indexes() -> None:
    store = Store()
    store.add_index("job", by_label("job-name"))
    store.upsert(pod("a", job="j"))
    store.upsert(pod("b", job="j"))
    previous = store.replace([pod("b", job="k", rv="5"), pod("c", job="j")])
    assert sorted(previous) == ["default/a", "default/b"]
    assert sorted(store.keys()) == ["default/b", "default/c"]
    assert store.index_keys("job", "j") == ["default/c"]
    assert store.index_keys("job", "k") == ["default/b"]


def test_a_failing_index_function_leaves_the_object_stored_but_unindexed() -> None:
    store = Store()

    def broken(obj: dict[str, Any]) -> list[str]:
        raise RuntimeError("bug")

    store.add_index("broken", broken)
    store.upsert(pod("a"))
    assert store.get("default/a") is not None
    assert store.by_index("broken", "x") == []
