"""Read-your-writes: a client's own writes stay visible until the watch reports them."""

from __future__ import annotations

from typing import Any

from kube.ownwrites import OwnWrites, version_after, version_at_least


def pod(name: str, uid: str, rv: str, owner: str = "job-uid", **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid,
            "resourceVersion": rv,
            "ownerReferences": [{"kind": "TFJob", "uid": owner, "controller": True}],
        },
        "status": dict(status),
    }


def test_a_created_pod_is_seen_before_its_watch_event_and_dropped_after() -> None:
    writes = OwnWrites()
    created = pod("j-worker-0", "u1", "10")
    writes.wrote("pods", created)
    assert writes.view_owned("pods", "job-uid", []) == [created]
    assert writes.observe("pods", "ADDED", created), "exactly our write: nothing new to plan"
    assert len(writes) == 0
    assert writes.view_owned("pods", "job-uid", []) == []


def test_an_older_cached_version_is_overridden_and_a_newer_one_wins() -> None:
    writes = OwnWrites()
    written = pod("p", "u1", "12", phase="Running")
    writes.wrote("pods", written)
    assert writes.view("pods", "ns", "p", pod("p", "u1", "11")) == written
    newer = pod("p", "u1", "13", phase="Succeeded")
    assert writes.view("pods", "ns", "p", newer) == newer


def test_a_new_object_replaces_a_stale_cached_one_of_the_same_name() -> None:
    writes = OwnWrites()
    writes.wrote("pods", pod("p", "new", "20"))
    seen = writes.view_owned("pods", "job-uid", [pod("p", "old", "5", phase="Failed")])
    assert [p["metadata"]["uid"] for p in seen] == ["new"]


def test_a_deleted_pod_shows_as_terminating_until_it_leaves_the_cache() -> None:
    writes = OwnWrites()
    cached = pod("p", "u1", "7", phase="Failed")
    writes.deleted("pods", "ns", "p", "u1", "job-uid")
    (seen,) = writes.view_owned("pods", "job-uid", [cached])
    assert seen["metadata"]["deletionTimestamp"]
    assert "deletionTimestamp" not in cached["metadata"]  # the cached object is never mutated
    assert not writes.observe("pods", "DELETED", cached), "a pod gone for good is news"
    assert len(writes) == 0


def test_modified_events_of_older_versions_keep_the_entry() -> None:
    writes = OwnWrites()
    writes.wrote("tfjobs", pod("j", "u1", "30"))
    assert not writes.observe("tfjobs", "MODIFIED", pod("j", "u1", "29"))
    assert len(writes) == 1
    assert not writes.observe("tfjobs", "MODIFIED", pod("j", "u1", "31")), "a later change is news"
    assert len(writes) == 0


def test_entries_expire_so_the_cache_is_trusted_again() -> None:
    now = [0.0]
    writes = OwnWrites(ttl=5.0, clock=lambda: now[0])
    writes.wrote("pods", pod("p", "u1", "3"))
    now[0] = 6.0
    assert writes.view_owned("pods", "job-uid", []) == []


def test_forget_owner_drops_everything_about_a_job() -> None:
    writes = OwnWrites()
    writes.wrote("pods", pod("a", "u1", "1"))
    writes.wrote("services", pod("a", "u2", "2"))
    writes.wrote("pods", pod("b", "u3", "3", owner="other"))
    writes.forget_owner("job-uid")
    assert len(writes) == 1


def test_version_comparison_is_numeric_when_possible_and_equality_otherwise() -> None:
    assert version_at_least("10", "9")
    assert not version_at_least("9", "10")
    assert version_at_least("abc", "abc")
    assert not version_at_least("abd", "abc")


def test_an_assumed_object_is_seen_until_the_cache_moves_past_the_version_it_came_from() -> None:
    """A bind answers with no pod: the scheduler assumes the cached pod with its node set."""
    clock = [0.0]
    writes = OwnWrites(ttl=10, clock=lambda: clock[0])
    cached = pod("p", "u1", "5")
    bound = pod("p", "u1", "5")
    bound["spec"] = {"nodeName": "las1"}
    writes.wrote("pods", bound, assumed=True)

    assert writes.view("pods", "ns", "p", cached) == bound, "the cache at the version it came from"
    assert not writes.observe("pods", "MODIFIED", cached), "an event at the same version changes nothing"
    assert len(writes) == 1
    fresh = pod("p", "u1", "6")
    fresh["spec"] = {"nodeName": "las1"}
    assert not writes.observe("pods", "MODIFIED", fresh), "the bind coming back is news to the planner"
    assert len(writes) == 0
    assert writes.view("pods", "ns", "p", fresh) is fresh

    writes.wrote("pods", bound, assumed=True)
    clock[0] = 11
    assert writes.view("pods", "ns", "p", cached) is cached, "an entry the watch never confirms expires"


def test_version_after() -> None:
    assert version_after("10", "9")
    assert not version_after("9", "9")
    assert version_after("abd", "abc")
    assert not version_after("abc", "abc")
