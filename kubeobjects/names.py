"""Object names, label keys and label values, checked and worded as apimachinery's validation does.

Each check returns apimachinery's messages in its order, an empty list when the value is valid;
users and scripts match these strings, so they are kept to the letter.
"""

from __future__ import annotations

import re
from typing import Final

DNS1123_LABEL_MAX_LENGTH: Final = 63
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
DNS1035_LABEL_MAX_LENGTH: Final = 63
LABEL_VALUE_MAX_LENGTH: Final = 63
QUALIFIED_NAME_MAX_LENGTH: Final = 63

_DNS1123_LABEL_FORMAT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FORMAT: Final = rf"{_DNS1123_LABEL_FORMAT}(\.{_DNS1123_LABEL_FORMAT})*"
_DNS1035_LABEL_FORMAT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME_FORMAT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FORMAT: Final = f"({_QUALIFIED_NAME_FORMAT})?"

_DNS1123_LABEL: Final = re.compile(_DNS1123_LABEL_FORMAT)
_DNS1123_SUBDOMAIN: Final = re.compile(_DNS1123_SUBDOMAIN_FORMAT)
_DNS1035_LABEL: Final = re.compile(_DNS1035_LABEL_FORMAT)
_QUALIFIED_NAME: Final = re.compile(_QUALIFIED_NAME_FORMAT)
_LABEL_VALUE: Final = re.compile(_LABEL_VALUE_FORMAT)


def _regex_message(message: str, pattern: str, *examples: str) -> str:
    shown = ",  or ".join(f"'{example}'" for example in examples)
    return f"{message} (e.g. {shown}, regex used for validation is '{pattern}')"


def max_length_message(length: int) -> str:
    return f"must be no more than {length} characters"


EMPTY_MESSAGE: Final = "must be non-empty"
DNS1123_LABEL_MESSAGE: Final = _regex_message(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character",
    _DNS1123_LABEL_FORMAT, "my-name", "123-abc",
)
DNS1123_SUBDOMAIN_MESSAGE: Final = _regex_message(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character",
    _DNS1123_SUBDOMAIN_FORMAT, "example.com",
)
DNS1035_LABEL_MESSAGE: Final = _regex_message(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character",
    _DNS1035_LABEL_FORMAT, "my-name", "abc-123",
)
_QUALIFIED_NAME_RULE: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
QUALIFIED_NAME_MESSAGE: Final = _regex_message(
    _QUALIFIED_NAME_RULE, _QUALIFIED_NAME_FORMAT, "MyName", "my.name", "123-abc"
)
LABEL_VALUE_MESSAGE: Final = _regex_message(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character",
    _LABEL_VALUE_FORMAT, "MyValue", "my_value", "12345",
)


def _checked(value: str, pattern: re.Pattern[str], max_length: int, message: str) -> list[str]:
    problems = []
    if len(value) > max_length:
        problems.append(max_length_message(max_length))
    if not pattern.fullmatch(value):
        problems.append(message)
    return problems


def dns1123_label_errors(value: str) -> list[str]:
    """IsDNS1123Label: namespaces, container and port names."""
    return _checked(value, _DNS1123_LABEL, DNS1123_LABEL_MAX_LENGTH, DNS1123_LABEL_MESSAGE)


def dns1123_subdomain_errors(value: str) -> list[str]:
    """IsDNS1123Subdomain: the names of most objects."""
    return _checked(value, _DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_MAX_LENGTH, DNS1123_SUBDOMAIN_MESSAGE)


def dns1035_label_errors(value: str) -> list[str]:
    """IsDNS1035Label: services, and anything that becomes a DNS host label."""
    return _checked(value, _DNS1035_LABEL, DNS1035_LABEL_MAX_LENGTH, DNS1035_LABEL_MESSAGE)


def label_value_errors(value: str) -> list[str]:
    """IsValidLabelValue."""
    return _checked(value, _LABEL_VALUE, LABEL_VALUE_MAX_LENGTH, LABEL_VALUE_MESSAGE)


def qualified_name_errors(value: str) -> list[str]:
    """IsQualifiedName: label and annotation keys, ``[prefix/]name``."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            f"a qualified name {QUALIFIED_NAME_MESSAGE} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    problems = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append(f"prefix part {EMPTY_MESSAGE}")
        else:
            problems.extend(f"prefix part {problem}" for problem in dns1123_subdomain_errors(prefix))
    name = parts[-1]
    if not name:
        problems.append(f"name part {EMPTY_MESSAGE}")
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        problems.append(f"name part {max_length_message(QUALIFIED_NAME_MAX_LENGTH)}")
    if not _QUALIFIED_NAME.fullmatch(name):
        problems.append(f"name part {QUALIFIED_NAME_MESSAGE}")
    return problems
