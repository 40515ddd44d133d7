"""Names and labels are checked and worded as apimachinery's validation does."""

from __future__ import annotations

import pytest

from kubeobjects.names import (
    DNS1035_LABEL_MESSAGE,
    DNS1123_LABEL_MESSAGE,
    DNS1123_SUBDOMAIN_MESSAGE,
    LABEL_VALUE_MESSAGE,
    QUALIFIED_NAME_MESSAGE,
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)


def test_messages_are_apimachinery_s_to_the_letter() -> None:
    assert DNS1035_LABEL_MESSAGE == (
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
        "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
        "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    )
    assert DNS1123_SUBDOMAIN_MESSAGE.endswith(
        r"(e.g. 'example.com', regex used for validation is "
        r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )


@pytest.mark.parametrize("name", ["a", "tftest", "a-1", "x" * 63])
def test_valid_dns1035_labels(name: str) -> None:
    assert dns1035_label_errors(name) == []


def test_dns1035_reports_length_then_pattern() -> None:
    assert dns1035_label_errors("0" * 64) == ["must be no more than 63 characters", DNS1035_LABEL_MESSAGE]
    assert dns1035_label_errors("0abc") == [DNS1035_LABEL_MESSAGE]
    assert dns1035_label_errors("abc-") == [DNS1035_LABEL_MESSAGE]


def test_dns1123_label_allows_a_leading_digit_but_no_dot() -> None:
    assert dns1123_label_errors("0abc") == []
    assert dns1123_label_errors("a.b") == [DNS1123_LABEL_MESSAGE]


def test_dns1123_subdomain() -> None:
    assert dns1123_subdomain_errors("a.example.com") == []
    assert dns1123_subdomain_errors("A") == [DNS1123_SUBDOMAIN_MESSAGE]
    assert dns1123_subdomain_errors("a" * 254) == ["must be no more than 253 characters"]


@pytest.mark.parametrize("value", ["", "Worker", "my_value", "1.2-3"])
def test_valid_label_values(value: str) -> None:
    assert label_value_errors(value) == []


def test_invalid_label_values() -> None:
    assert label_value_errors("-a") == [LABEL_VALUE_MESSAGE]
    assert label_value_errors("a" * 64) == ["must be no more than 63 characters"]


def test_qualified_names() -> None:
    assert qualified_name_errors("training.kubeflow.org/job-name") == []
    assert qualified_name_errors("/x") == ["prefix part must be non-empty"]
    assert qualified_name_errors("Bad_Prefix/x") == [f"prefix part {DNS1123_SUBDOMAIN_MESSAGE}"]
    assert qualified_name_errors("a/") == [
        "name part must be non-empty",
        f"name part {QUALIFIED_NAME_MESSAGE}",
    ]
    assert qualified_name_errors("a/b/c")[0].startswith("a qualified name must consist of")
