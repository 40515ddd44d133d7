"""The PodGroup of a gang-scheduled job (upstream v1.9, D11, D15)."""

from __future__ import annotations

import pytest
from tfjob_test_builders import container, make_job, replica, seed_job

from tfjob.facts import read_facts
from tfjob.podgroup import (
    desired_podgroup,
    min_member,
    min_resources,
    min_task_member,
    podgroup_spec_patch,
)
from tfjob.pods import gang_marks
from tfjob.settings import Settings
from tfjob.wire import PodGroup

VOLCANO = Settings()
SCHEDULER_PLUGINS = Settings(gang_scheduler_name="scheduler-plugins-scheduler")


def requests(**resources: str) -> dict[str, dict[str, str]]:
    return {"requests": resources}


def scenario_49_job() -> dict:  # type: ignore[type-arg]
    job = make_job(
        {
            "PS": replica(1, containers=[container(resources=requests(cpu="1"))]),
            "Worker": replica(2, containers=[container(resources=requests(cpu="2", memory="4Gi"))]),
        }
    )
    job["metadata"]["annotations"] = {"team": "ml"}
    return job  # type: ignore[return-value]


def test_s49_volcano_podgroup_shape() -> None:
    assert desired_podgroup(read_facts(scenario_49_job()), {}, VOLCANO) == {  # type: ignore[arg-type]
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "tj",
            "namespace": "ns",
            "annotations": {"team": "ml"},
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "TFJob",
                    "name": "tj",
                    "uid": "uid-1",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "minMember": 3,
            "queue": "default",
            "priorityClassName": "",
            "minResources": {"cpu": "5", "memory": "8Gi"},
            "minTaskMember": {"ps": 1, "worker": 2},
        },
    }


def test_seed_podgroup_has_min_member_4_from_limits() -> None:
    podgroup = desired_podgroup(read_facts(seed_job("normal")), {}, VOLCANO)
    assert podgroup["spec"] == {
        "minMember": 4,
        "queue": "default",
        "priorityClassName": "",
        "minResources": {"cpu": "4", "memory": "400Mi"},
        "minTaskMember": {"ps": 1, "worker": 3},
    }


def test_min_member_counts_every_type_with_unset_replicas_as_one() -> None:
    job = make_job(
        {
            "PS": {"template": {"spec": {"containers": [container()]}}},
            "Worker": replica(3),
            "Evaluator": replica(1),
        }
    )
    assert min_member(read_facts(job)) == 5
    job = make_job({"Worker": replica(3)}, runPolicy={"schedulingPolicy": {"minAvailable": 1}})
    assert min_member(read_facts(job)) == 1


def test_s50_d11_min_resources_follow_priority_class_values() -> None:
    """Upstream picks a random type here (lister never started); D11 looks the class value up."""
    job = make_job(
        {
            "PS": replica(1, containers=[container(resources=requests(cpu="1"))]),
            "Worker": replica(
                2, containers=[container(resources=requests(cpu="2", memory="4Gi"))], priorityClassName="high"
            ),
        },
        runPolicy={"schedulingPolicy": {"minAvailable": 1}},
    )
    assert min_member(read_facts(job)) == 1
    assert min_resources(read_facts(job), 1, {"high": 1000}) == {"cpu": "2", "memory": "4Gi"}
    assert desired_podgroup(read_facts(job), {"high": 1000}, VOLCANO)["spec"]["minResources"] == {
        "cpu": "2",
        "memory": "4Gi",
    }


def test_facts_kept_between_passes_give_the_minresources_of_each_passs_priority_classes() -> None:
    # The controller plans over facts it keeps (FactsMemo), and the sum is remembered with them:
    # a PriorityClass that appears or changes value between two passes still reorders the types.
    job = make_job(
        {
            "PS": replica(1, containers=[container(resources=requests(cpu="1"))]),
            "Worker": replica(
                2, containers=[container(resources=requests(cpu="2"))], priorityClassName="high"
            ),
        },
        runPolicy={"schedulingPolicy": {"minAvailable": 1}},
    )
    facts = read_facts(job)
    assert desired_podgroup(facts, {}, VOLCANO)["spec"]["minResources"] == {"cpu": "1"}
    assert desired_podgroup(facts, {"high": 1000}, VOLCANO)["spec"]["minResources"] == {"cpu": "2"}
    assert desired_podgroup(facts, {"high": -5}, VOLCANO)["spec"]["minResources"] == {"cpu": "1"}
    first = desired_podgroup(facts, {}, VOLCANO)
    first["spec"]["minResources"]["cpu"] = "changed by a caller"
    assert desired_podgroup(facts, {}, VOLCANO)["spec"]["minResources"] == {"cpu": "1"}


def test_d11_ties_follow_chief_master_ps_worker_evaluator() -> None:
    job = make_job(
        {
            "Evaluator": replica(1, containers=[container(resources=requests(cpu="8"))]),
            "Worker": replica(2, containers=[container(resources=requests(cpu="4"))]),
            "PS": replica(1, containers=[container(resources=requests(cpu="2"))]),
            "Chief": replica(1, containers=[container(resources=requests(cpu="1"))]),
        }
    )
    assert min_resources(read_facts(job), 1, {}) == {"cpu": "1"}
    assert min_resources(read_facts(job), 2, {}) == {"cpu": "3"}
    assert min_resources(read_facts(job), 3, {}) == {"cpu": "7"}
    assert min_resources(read_facts(job), 5, {}) == {"cpu": "19"}
    assert min_resources(read_facts(job), 99, {}) == {"cpu": "19"}
    assert min_resources(read_facts(job), 0, {}) == {}


def test_d11_unknown_priority_classes_count_as_zero_and_negative_values_sort_last() -> None:
    job = make_job(
        {
            "PS": replica(1, containers=[container(resources=requests(cpu="2"))], priorityClassName="low"),
            "Worker": replica(
                1, containers=[container(resources=requests(cpu="4"))], priorityClassName="missing"
            ),
        }
    )
    assert min_resources(read_facts(job), 1, {"low": -5}) == {"cpu": "4"}


def test_limits_count_only_for_a_container_without_requests() -> None:
    job = make_job(
        {
            "Worker": replica(
                1,
                containers=[
                    container(resources={"limits": {"cpu": "4"}}),
                    container("side", resources={"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}),
                    container("empty", resources={"requests": {}, "limits": {"cpu": "9"}}),
                ],
            )
        }
    )
    assert min_resources(read_facts(job), 1, {}) == {"cpu": "4500m"}


def test_s51_explicit_scheduling_policy_is_used_as_is() -> None:
    job = make_job(
        {"Worker": replica(2, containers=[container(resources=requests(cpu="2"))])},
        runPolicy={"schedulingPolicy": {"queue": "q1", "priorityClass": "pc", "minResources": {"cpu": 10}}},
    )
    assert desired_podgroup(read_facts(job), {}, VOLCANO)["spec"] == {
        "minMember": 2,
        "queue": "q1",
        "priorityClassName": "pc",
        "minResources": {"cpu": "10"},
        "minTaskMember": {"worker": 2},
    }


def test_s51_d15_an_existing_queue_is_kept() -> None:
    job = make_job({"Worker": replica(2)}, runPolicy={"schedulingPolicy": {"queue": "q1"}})
    desired = desired_podgroup(read_facts(job), {}, VOLCANO)
    existing: PodGroup = {"spec": {**desired["spec"], "queue": "q0"}}
    assert podgroup_spec_patch(existing, desired) is None


def test_s54_scheduler_plugins_podgroup_shape() -> None:
    job = scenario_49_job()
    job["spec"]["runPolicy"] = {"schedulingPolicy": {"scheduleTimeoutSeconds": 60}}
    podgroup = desired_podgroup(read_facts(job), {}, SCHEDULER_PLUGINS)  # type: ignore[arg-type]
    assert podgroup["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert podgroup["kind"] == "PodGroup"
    assert podgroup["metadata"]["name"] == "tj"
    assert podgroup["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "5", "memory": "8Gi"},
        "scheduleTimeoutSeconds": 60,
    }
    del job["spec"]["runPolicy"]
    assert "scheduleTimeoutSeconds" not in desired_podgroup(read_facts(job), {}, SCHEDULER_PLUGINS)["spec"]  # type: ignore[arg-type]


def test_no_podgroup_when_gang_scheduling_is_off() -> None:
    with pytest.raises(ValueError, match="gang scheduling is off"):
        desired_podgroup(read_facts(scenario_49_job()), {}, Settings(gang_scheduler_name=""))  # type: ignore[arg-type]


def test_d15_no_patch_when_nothing_differs_even_in_another_spelling() -> None:
    desired = desired_podgroup(read_facts(scenario_49_job()), {}, VOLCANO)  # type: ignore[arg-type]
    stored: PodGroup = {
        "spec": {
            "minMember": 3,
            "queue": "default",
            "minResources": {"cpu": "5000m", "memory": "8192Mi"},
            "minTaskMember": {"ps": 1, "worker": 2},
        },
        "status": {"phase": "Inqueue"},
    }
    assert podgroup_spec_patch(stored, desired) is None


def test_d15_patch_carries_only_the_changed_fields() -> None:
    desired = desired_podgroup(read_facts(scenario_49_job()), {}, VOLCANO)  # type: ignore[arg-type]
    stored: PodGroup = {
        "spec": {
            "minMember": 2,
            "queue": "",
            "priorityClassName": "",
            "minResources": {"cpu": "5", "memory": "4Gi", "nvidia.com/gpu": "1"},
            "minTaskMember": {"worker": 1},
        }
    }
    assert podgroup_spec_patch(stored, desired) == {
        "spec": {
            "minMember": 3,
            "queue": "default",
            "minResources": {"nvidia.com/gpu": None, "memory": "8Gi"},
            "minTaskMember": {"ps": 1, "worker": 2},
        }
    }


def test_d15_patch_of_a_podgroup_without_spec_sets_everything() -> None:
    desired = desired_podgroup(read_facts(scenario_49_job()), {}, VOLCANO)  # type: ignore[arg-type]
    assert podgroup_spec_patch({}, desired) == {
        "spec": {
            "minMember": 3,
            "queue": "default",
            "minResources": {"cpu": "5", "memory": "8Gi"},
            "minTaskMember": {"ps": 1, "worker": 2},
        }
    }


# --- minTaskMember: per-role gangs ---------------------------------------------------------------


def test_min_task_member_without_min_available_is_every_role_at_its_replicas() -> None:
    job = make_job({"PS": replica(2), "Worker": replica(3), "Evaluator": replica(1), "Chief": replica(1)})
    assert min_task_member(read_facts(job)) == {"ps": 2, "worker": 3, "chief": 1, "evaluator": 1}


def test_min_task_member_keys_are_the_task_spec_the_webhook_stamps() -> None:
    job = make_job({"PS": replica(1), "Worker": replica(2)})
    facts = read_facts(job)
    stamped = {
        gang_marks(r, facts.name, VOLCANO).annotations["volcano.sh/task-spec"] for r in facts.replica_types
    }
    assert set(min_task_member(facts)) == stamped


def test_min_task_member_below_the_total_keeps_ps_and_chief_and_fills_workers() -> None:
    job = make_job(
        {"Chief": replica(1), "PS": replica(2), "Worker": replica(4), "Evaluator": replica(1)},
        runPolicy={"schedulingPolicy": {"minAvailable": 5}},
    )
    # 1 chief + 2 ps are essential; 2 of the 5 go to workers; the evaluator never stands in.
    assert min_task_member(read_facts(job)) == {"chief": 1, "ps": 2, "worker": 2}


def test_min_task_member_below_the_essential_roles_keeps_them_and_no_worker() -> None:
    job = make_job(
        {"PS": replica(2), "Worker": replica(4)}, runPolicy={"schedulingPolicy": {"minAvailable": 1}}
    )
    assert min_task_member(read_facts(job)) == {"ps": 2}


def test_min_task_member_leaves_out_roles_without_replicas() -> None:
    job = make_job({"PS": replica(0), "Worker": replica(2)})
    assert min_task_member(read_facts(job)) == {"worker": 2}


def test_scheduler_plugins_podgroup_has_no_min_task_member() -> None:
    spec = desired_podgroup(read_facts(scenario_49_job()), {}, SCHEDULER_PLUGINS)["spec"]  # type: ignore[arg-type]
    assert "minTaskMember" not in spec


def test_d15_min_task_member_follows_replica_changes_and_drops_gone_roles() -> None:
    job = make_job({"Worker": replica(3)})
    desired = desired_podgroup(read_facts(job), {}, VOLCANO)
    stored: PodGroup = {"spec": {**desired["spec"], "minTaskMember": {"ps": 1, "worker": 2}}}
    assert podgroup_spec_patch(stored, desired) == {"spec": {"minTaskMember": {"ps": None, "worker": 3}}}
    unchanged: PodGroup = {"spec": dict(desired["spec"])}
    assert podgroup_spec_patch(unchanged, desired) is None


def test_d15_min_task_member_removed_when_no_role_has_replicas() -> None:
    job = make_job({"Worker": replica(0)})
    desired = desired_podgroup(read_facts(job), {}, VOLCANO)
    assert "minTaskMember" not in desired["spec"]
    stored: PodGroup = {"spec": {**desired["spec"], "minTaskMember": {"worker": 2}}}
    assert podgroup_spec_patch(stored, desired) == {"spec": {"minTaskMember": None}}


# --- networkTopology from the annotation ---------------------------------------------------------


def _topology_job(value: str | None) -> dict:  # type: ignore[type-arg]
    job = make_job({"Worker": replica(2)})
    if value is not None:
        job["metadata"]["annotations"] = {"tfgang.io/network-topology": value}
    return job  # type: ignore[return-value]


def test_network_topology_comes_from_the_annotation() -> None:
    job = _topology_job('{"mode": "hard", "highestTierAllowed": 1}')
    spec = desired_podgroup(read_facts(job), {}, VOLCANO)["spec"]  # type: ignore[arg-type]
    assert spec["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}
    soft = desired_podgroup(read_facts(_topology_job('{"mode": "soft"}')), {}, VOLCANO)["spec"]  # type: ignore[arg-type]
    assert soft["networkTopology"] == {"mode": "soft"}
    defaulted = desired_podgroup(read_facts(_topology_job('{"highestTierAllowed": 2}')), {}, VOLCANO)  # type: ignore[arg-type]
    assert defaulted["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    named = desired_podgroup(read_facts(_topology_job('{"highestTierName": "spine"}')), {}, VOLCANO)  # type: ignore[arg-type]
    assert named["spec"]["networkTopology"] == {"mode": "hard", "highestTierName": "spine"}


@pytest.mark.parametrize(
    "value",
    [
        None,
        "not json",
        '{"mode": "strict"}',
        '{"highestTierAllowed": -1}',
        '{"highestTierName": ""}',
        '{"highestTierAllowed": 1, "highestTierName": "spine"}',
        "[" * 200_000,
    ],
)
def test_without_a_valid_annotation_nothing_changes(value: str | None) -> None:
    spec = desired_podgroup(read_facts(_topology_job(value)), {}, VOLCANO)["spec"]  # type: ignore[arg-type]
    assert "networkTopology" not in spec
    assert (
        "networkTopology"
        not in desired_podgroup(
            read_facts(_topology_job('{"mode": "hard"}')),
            {},
            SCHEDULER_PLUGINS,  # type: ignore[arg-type]
        )["spec"]
    )


def test_d15_network_topology_is_patched_when_the_annotation_changes_and_removed_whole() -> None:
    hard = desired_podgroup(
        read_facts(_topology_job('{"mode": "hard", "highestTierAllowed": 1}')), {}, VOLCANO
    )  # type: ignore[arg-type]
    soft = desired_podgroup(read_facts(_topology_job('{"mode": "soft"}')), {}, VOLCANO)  # type: ignore[arg-type]
    assert podgroup_spec_patch(hard, soft) == {
        "spec": {"networkTopology": {"mode": "soft", "highestTierAllowed": None}}
    }
    none = desired_podgroup(read_facts(_topology_job(None)), {}, VOLCANO)  # type: ignore[arg-type]
    assert podgroup_spec_patch(hard, none) == {"spec": {"networkTopology": None}}
    assert podgroup_spec_patch(hard, hard) is None
