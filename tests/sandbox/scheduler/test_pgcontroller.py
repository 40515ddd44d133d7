"""The pg-controller's implicit PodGroups."""

from __future__ import annotations

from sandbox.scheduler.pgcontroller import implicit_group

from .factories import pod

VOLCANO = frozenset({"volcano"})


def test_an_unannotated_volcano_pod_gets_a_podgroup_named_after_its_controller_owner() -> None:
    loose = pod("w-0", cpu="2", memory="1Gi")
    loose["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "owner-uid", "controller": True}
    ]
    group = implicit_group(loose, VOLCANO)

    assert group is not None
    assert (group.namespace, group.pod, group.group) == ("default", "w-0", "podgroup-owner-uid")
    assert group.body["spec"] == {
        "minMember": 1,
        "queue": "default",
        "minResources": {"cpu": "2", "memory": "1073741824"},
    }
    assert group.body["metadata"]["ownerReferences"][0]["uid"] == "owner-uid"


def test_without_an_owner_the_pod_itself_names_the_podgroup() -> None:
    group = implicit_group(pod("solo"), VOLCANO)
    assert group is not None and group.group == "podgroup-uid-solo"
    assert group.body["metadata"]["ownerReferences"][0]["kind"] == "Pod"


def test_pods_that_need_no_implicit_podgroup() -> None:
    assert implicit_group(pod("grouped", group="g"), VOLCANO) is None
    assert implicit_group(pod("plain", scheduler="default-scheduler"), VOLCANO) is None
    assert implicit_group(pod("bound", node_name="las1"), VOLCANO) is None
    assert implicit_group(pod("done", phase="Succeeded"), VOLCANO) is None
