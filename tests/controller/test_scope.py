"""The controller's scope: the ``--namespace-selector`` flag read as kube-apiserver reads a webhook's
namespaceSelector, its refusals, and the bounded memory of which job versions were told."""

from __future__ import annotations

import pytest

from controller.config import parse_config
from controller.scope import OutsideScopeNotices, parse_namespace_selector

NAME = "kubernetes.io/metadata.name"


def test_no_selector_serves_every_namespace() -> None:
    for text in ("", "{}", '{"matchExpressions": []}'):
        scope = parse_namespace_selector(text)
        assert scope.everywhere and scope.admits({}) and scope.admits({NAME: "kube-system"})
    assert parse_config([], environ={}).scope.everywhere


def test_match_labels_and_every_operator_follow_apimachinery() -> None:
    scope = parse_config(
        [],
        environ={
            "TFGANG_NAMESPACE_SELECTOR": '{"matchLabels": {"team": "ml"}, "matchExpressions": ['
            '{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]},'
            '{"key": "tier", "operator": "In", "values": ["a", "b"]},'
            '{"key": "opt-in", "operator": "Exists"},'
            '{"key": "frozen", "operator": "DoesNotExist"}]}'
        },
    ).scope
    served = {"team": "ml", "tier": "b", "opt-in": ""}
    assert scope.admits(served)
    assert scope.admits({**served, NAME: "default"})
    assert not scope.admits({**served, NAME: "kube-system"})
    assert not scope.admits({**served, "team": "web"})
    assert not scope.admits({**served, "tier": "c"})
    assert not scope.admits({key: value for key, value in served.items() if key != "opt-in"})
    assert not scope.admits({**served, "frozen": "yes"})


def test_yaml_is_accepted_as_well() -> None:
    scope = parse_namespace_selector("matchLabels:\n  team: ml\n")
    assert scope.admits({"team": "ml"}) and not scope.admits({})


@pytest.mark.parametrize(
    "text",
    [
        "[1, 2]",
        '{"matchFields": []}',
        '{"matchLabels": {"a": 1}}',
        '{"matchExpressions": [{"key": "a", "operator": "Bogus"}]}',
        '{"matchExpressions": [{"key": "a", "operator": "In"}]}',
        '{"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}',
        '{"matchExpressions": [{"operator": "Exists"}]}',
        '{"matchExpressions": [{"key": "a", "operator": "Exists", "extra": 1}]}',
        "{not: [valid",
    ],
)
def test_a_bad_selector_is_a_usage_error(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_config(["--namespace-selector", text], environ={})
    assert exited.value.code == 2
    assert "--namespace-selector" in capsys.readouterr().err


def test_each_job_version_is_told_once_and_the_memory_is_bounded() -> None:
    notices = OutsideScopeNotices(capacity=3)
    assert notices.first_time("a", "1")
    assert not notices.first_time("a", "1")
    assert notices.first_time("a", "2")  # the job changed
    for uid in ("b", "c", "d"):
        assert notices.first_time(uid, "1")
    assert len(notices) == 3
    assert notices.first_time("a", "2")  # forgotten as the oldest: told once more, never a storm
    notices.forget("a")
    assert len(notices) == 2
