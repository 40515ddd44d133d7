"""TF_CONFIG byte for byte as upstream v1.9 writes it."""

from __future__ import annotations

import json

from tfjob_test_builders import container, make_job, replica, seed_job

from tfjob.facts import read_facts
from tfjob.tfconfig import tf_config

# Copied from the seed transcript (`kubectl describe po tftest-ps-0` / `tftest-worker-0`).
SEED_PS_0 = (
    '{"cluster":{"ps":["tftest-ps-0.default.svc:2222"],"worker":["tftest-worker-0.default.svc:2222",'
    '"tftest-worker-1.default.svc:2222","tftest-worker-2.default.svc:2222"]},'
    '"task":{"type":"ps","index":0},"environment":"cloud"}'
)
SEED_WORKER_0 = (
    '{"cluster":{"ps":["tftest-ps-0.default.svc:2222"],"worker":["tftest-worker-0.default.svc:2222",'
    '"tftest-worker-1.default.svc:2222","tftest-worker-2.default.svc:2222"]},'
    '"task":{"type":"worker","index":0},"environment":"cloud"}'
)


def test_seed_tf_config_of_tftest_ps_0_and_worker_0_byte_for_byte() -> None:
    job = seed_job("normal")
    assert tf_config(read_facts(job), "PS", 0) == SEED_PS_0
    assert tf_config(read_facts(job), "Worker", 0) == SEED_WORKER_0


def test_the_seed_failure_experiments_get_the_same_tf_config() -> None:
    for seed in ("ps-failure", "worker-failure"):
        assert tf_config(read_facts(seed_job(seed)), "Worker", 0) == SEED_WORKER_0


def test_s02_per_type_port() -> None:
    job = make_job(
        {
            "PS": replica(1),
            "Worker": replica(
                2, containers=[container(ports=[{"name": "tfjob-port", "containerPort": 3333}])]
            ),
        }
    )
    assert tf_config(read_facts(job), "PS", 0) == (
        '{"cluster":{"ps":["tj-ps-0.ns.svc:2222"],"worker":["tj-worker-0.ns.svc:3333","tj-worker-1.ns.svc:3333"]},'
        '"task":{"type":"ps","index":0},"environment":"cloud"}'
    )


def test_s11_local_job_has_no_tf_config() -> None:
    job = make_job({"Worker": replica(1)})
    assert not read_facts(job).distributed
    assert tf_config(read_facts(job), "Worker", 0) is None


def test_s12_ps_2_worker_4_tf_config_of_worker_1() -> None:
    job = make_job({"PS": replica(2), "Worker": replica(4)})
    assert tf_config(read_facts(job), "Worker", 1) == (
        '{"cluster":{"ps":["tj-ps-0.ns.svc:2222","tj-ps-1.ns.svc:2222"],"worker":["tj-worker-0.ns.svc:2222",'
        '"tj-worker-1.ns.svc:2222","tj-worker-2.ns.svc:2222","tj-worker-3.ns.svc:2222"]},'
        '"task":{"type":"worker","index":1},"environment":"cloud"}'
    )


def test_s13_cluster_keys_sorted_and_evaluator_included() -> None:
    job = make_job({"Worker": replica(2), "PS": replica(1), "Chief": replica(1), "Evaluator": replica(1)})
    config = tf_config(read_facts(job), "Evaluator", 0)
    assert config is not None
    assert config.startswith('{"cluster":{"chief":["tj-chief-0.ns.svc:2222"],"evaluator":')
    document = json.loads(config)
    assert list(document) == ["cluster", "task", "environment"]
    assert list(document["cluster"]) == ["chief", "evaluator", "ps", "worker"]
    assert config.endswith('"task":{"type":"evaluator","index":0},"environment":"cloud"}')


def test_s14_single_ps_is_not_distributed() -> None:
    assert tf_config(read_facts(make_job({"PS": replica(1)})), "PS", 0) is None


def test_s15_custom_cluster_domain() -> None:
    job = make_job({"PS": replica(1), "Worker": replica(1)})
    assert tf_config(read_facts(job), "Worker", 0, cluster_domain="cluster.local") == (
        '{"cluster":{"ps":["tj-ps-0.ns.svc.cluster.local:2222"],"worker":["tj-worker-0.ns.svc.cluster.local:2222"]},'
        '"task":{"type":"worker","index":0},"environment":"cloud"}'
    )


def test_s16_sparse_form_for_dynamic_workers() -> None:
    job = make_job({"PS": replica(1), "Worker": replica(2)}, enableDynamicWorker=True)
    assert tf_config(read_facts(job), "Worker", 1) == (
        '{"cluster":{"worker":{"1":"tj-worker-1.ns.svc:2222"},"ps":["tj-ps-0.ns.svc:2222"]},'
        '"task":{"type":"worker","index":1}}'
    )
    assert tf_config(read_facts(job), "PS", 0) == (
        '{"cluster":{"worker":{},"ps":["tj-ps-0.ns.svc:2222"]},"task":{"type":"ps","index":0}}'
    )


def test_s16_sparse_form_without_ps_has_ps_null() -> None:
    job = make_job({"Worker": replica(2)}, enableDynamicWorker=True)
    assert tf_config(read_facts(job), "Worker", 0) == (
        '{"cluster":{"worker":{"0":"tj-worker-0.ns.svc:2222"},"ps":null},"task":{"type":"worker","index":0}}'
    )


def test_s16_sparse_form_for_chief_lists_nobody() -> None:
    job = make_job({"Chief": replica(1), "Worker": replica(2)}, enableDynamicWorker=True)
    assert (
        tf_config(read_facts(job), "Chief", 0)
        == '{"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}}'
    )


def test_s18_tf_config_is_the_operators_string_whatever_the_user_set() -> None:
    """D13: keeping a user's own TF_CONFIG is the webhook's job; here only the string matters."""
    user_env = [{"name": "TF_CONFIG", "value": "{}"}]
    job = make_job({"PS": replica(1), "Worker": replica(1, containers=[container(env=user_env)])})
    assert tf_config(read_facts(job), "Worker", 0) == (
        '{"cluster":{"ps":["tj-ps-0.ns.svc:2222"],"worker":["tj-worker-0.ns.svc:2222"]},'
        '"task":{"type":"worker","index":0},"environment":"cloud"}'
    )


def test_s08_unknown_types_are_lowercased_in_the_cluster_but_do_not_count_as_distributed() -> None:
    job = make_job({"Worker": replica(1), "Foo": replica(1)})
    assert not read_facts(job).distributed, "unknown types do not count toward the total"
    job = make_job({"Chief": replica(1), "Worker": replica(1), "Foo": replica(1)})
    config = tf_config(read_facts(job), "Foo", 0)
    assert config is not None
    assert json.loads(config)["cluster"]["foo"] == ["tj-foo-0.ns.svc:2222"]
    assert '"task":{"type":"foo","index":0}' in config


def test_raw_lowercase_keys_are_defaulted_first() -> None:
    raw = make_job({"ps": {"template": {"spec": {"containers": [container()]}}}, "worker": replica(2)})
    assert tf_config(read_facts(raw), "worker", 1) == (
        '{"cluster":{"ps":["tj-ps-0.ns.svc:2222"],"worker":["tj-worker-0.ns.svc:2222","tj-worker-1.ns.svc:2222"]},'
        '"task":{"type":"worker","index":1},"environment":"cloud"}'
    )


def test_zero_replicas_show_as_an_empty_list_and_zero_total_counts_as_distributed() -> None:
    job = make_job({"PS": replica(0), "Worker": replica(2)})
    config = tf_config(read_facts(job), "Worker", 0)
    assert config is not None and '"ps":[]' in config
    assert read_facts(make_job({"Worker": replica(0)})).distributed
