"""Each action names the event the controller reports once it has carried it out (upstream v1.9)."""

from __future__ import annotations

import pytest

from tfjob.planner import (
    Action,
    CreatePod,
    CreatePodGroup,
    CreateService,
    DeleteJob,
    DeletePod,
    DeletePodGroup,
    DeleteService,
    Event,
    PatchPodGroup,
)

POD = {"metadata": {"name": "tj-worker-0"}}


@pytest.mark.parametrize(
    ("action", "success", "failure"),
    [
        (CreatePod(POD), Event("Normal", "SuccessfulCreatePod", "Created pod: tj-worker-0"),
         Event("Warning", "FailedCreatePod", "Error creating: boom")),
        (DeletePod("tj-worker-0", "u"), Event("Normal", "SuccessfulDeletePod", "Deleted pod: tj-worker-0"),
         Event("Warning", "FailedDeletePod", "Error deleting: boom")),
        (CreateService(POD), Event("Normal", "SuccessfulCreateService", "Created service: tj-worker-0"),
         Event("Warning", "FailedCreateService", "Error creating: boom")),
        (DeleteService("tj-worker-0", "u"),
         Event("Normal", "SuccessfulDeleteService", "Deleted service: tj-worker-0"),
         Event("Warning", "FailedDeleteService", "Error deleting: boom")),
        (DeletePodGroup("tj", "u"), Event("Normal", "SuccessfulDeletePodGroup", "Deleted PodGroup: tj"),
         Event("Warning", "FailedDeletePodGroup", "Error deleting: boom")),
        (DeleteJob("tj", "u"), Event("Normal", "SuccessfulDeleteJob", "Deleted job: tj"),
         Event("Warning", "FailedDeleteJob", "Error deleting: boom")),
        (CreatePodGroup({"metadata": {"name": "tj"}}), None, None),
        (PatchPodGroup("tj", {"spec": {"minMember": 2}}), None, None),
    ],
)  # fmt: skip
def test_action_events(action: Action, success: Event | None, failure: Event | None) -> None:
    assert action.success_event() == success
    assert action.failure_event("boom") == failure


def test_every_delete_names_its_target_and_the_uid_it_means() -> None:
    from datetime import UTC, datetime

    from tfjob.planner.actions import Target
    from tfjob.planner.cleanup import delete_everything, delete_podgroup
    from tfjob.planner.draft import Draft

    def obj(name: str) -> dict[str, object]:
        return {"metadata": {"name": name, "uid": f"uid-{name}"}}

    draft = Draft.starting_from(None, datetime(2026, 11, 29, tzinfo=UTC))
    delete_everything(draft, [obj("tj-worker-0")], [obj("tj-worker-0")])
    delete_podgroup(draft, obj("tj"))  # type: ignore[arg-type]
    assert [action.target for action in draft.actions] == [
        Target("pods", "tj-worker-0", "uid-tj-worker-0"),
        Target("services", "tj-worker-0", "uid-tj-worker-0"),
        Target("podgroups", "tj", "uid-tj"),
    ]
    assert {action.verb for action in draft.actions} == {"delete"}
