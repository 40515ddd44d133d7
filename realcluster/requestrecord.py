"""One API call as a request log records it: the sandbox API server's own log and kube-apiserver's
audit log (``realcluster.apiserver``) both read into this shape, so tests compare them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["RequestRecord"]


@dataclass(frozen=True)
class RequestRecord:
    verb: str
    group: str
    version: str
    resource: str
    subresource: str
    namespace: str
    name: str
    user: str
    code: int
    # The answer's form the request asked for (``Accept``'s ``as=``: "PartialObjectMetadata",
    # "PartialObjectMetadataList", "Table"); empty for the object itself, a request refused before
    # negotiating, and on kube-apiserver, whose audit events do not carry ``Accept``.
    form: str = ""

    def wire(self) -> dict[str, Any]:
        return asdict(self)
