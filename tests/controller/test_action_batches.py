"""Which planned actions may run concurrently: only runs of pod and service creates."""

from __future__ import annotations

from controller.reconciler import batches
from tfjob.planner.actions import (
    CreatePod,
    CreatePodGroup,
    CreateService,
    DeletePod,
    DeletePodGroup,
)


def test_the_podgroup_goes_alone_before_the_pods_and_services_that_follow_it() -> None:
    group = CreatePodGroup({"metadata": {"name": "j"}})
    pod0, pod1 = (
        CreatePod({"metadata": {"name": "j-worker-0"}}),
        CreatePod({"metadata": {"name": "j-worker-1"}}),
    )
    svc0 = CreateService({"metadata": {"name": "j-worker-0"}})
    assert batches((group, pod0, pod1, svc0)) == [(group,), (pod0, pod1, svc0)]


def test_deletes_keep_plan_order_and_split_create_runs() -> None:
    pod0 = CreatePod({"metadata": {"name": "a"}})
    delete = DeletePod("b", "uid-b")
    pod1 = CreatePod({"metadata": {"name": "c"}})
    drop = DeletePodGroup("j", "uid-j")
    assert batches((pod0, delete, pod1, drop)) == [(pod0,), (delete,), (pod1,), (drop,)]
    assert batches(()) == []
