"""One record per API call, readable in-process and at ``/sandbox/requests``."""

from __future__ import annotations

from collections import deque

from realcluster.requestrecord import RequestRecord


class RequestLog:
    def __init__(self, limit: int = 200_000) -> None:
        self._records: deque[RequestRecord] = deque(maxlen=limit)

    def add(self, record: RequestRecord) -> None:
        self._records.append(record)

    def records(self) -> list[RequestRecord]:
        return list(self._records)

    def clear(self) -> None:
        self._records.clear()


def kubernetes_verb(method: str, has_name: bool, watch: bool) -> str:
    """The verb as Kubernetes audit logs and RBAC name it."""
    if method == "GET":
        if watch:
            return "watch"
        return "get" if has_name else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if has_name else "deletecollection"
    return method.lower()
