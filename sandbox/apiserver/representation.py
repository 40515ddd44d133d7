"""The form of an answer, negotiated from the request's ``Accept`` header as kube-apiserver does.

A media range may ask for a transformed answer with ``as=<Kind>;g=meta.k8s.io;v=<version>``:

- ``as=Table``: server-side printing (``sandbox.apiserver.tables``), for objects and lists;
- ``as=PartialObjectMetadata``: one object's ``metadata`` only, under
  ``{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/<version>"}``, for gets, writes'
  answers and each object of a watch (how a client that only needs names, labels and owners
  saves the server encoding, and itself decoding, the rest);
- ``as=PartialObjectMetadataList``: the same for a list, as ``PartialObjectMetadataList``.

Ranges are tried in order and the first the server can serve wins. A range without ``as=`` is
the object itself (the sandbox answers JSON whatever the media type). A header made only of
``as=`` forms the server does not know is refused with 406, as is PartialObjectMetadata asked of
a list or PartialObjectMetadataList of a single object or of a watch, whose events are single
objects (kube-apiserver v1.20 answers that watch 200 and sends nothing). Status answers (a
delete's, a binding's) and errors are never transformed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from sandbox.apiserver import errors
from sandbox.apiserver.jsonobj import JsonObj

META_GROUP = "meta.k8s.io"
_META_VERSIONS = ("v1", "v1beta1")
ACCEPTED_MEDIA_TYPES = "application/json, application/yaml, application/vnd.kubernetes.protobuf"


class Form(enum.Enum):
    OBJECT = ""
    TABLE = "Table"
    METADATA = "PartialObjectMetadata"
    METADATA_LIST = "PartialObjectMetadataList"


@dataclass(frozen=True)
class Wanted:
    form: Form
    version: str = "v1"  # of meta.k8s.io, for the transformed forms

    @property
    def table(self) -> bool:
        return self.form is Form.TABLE


AS_STORED = Wanted(Form.OBJECT)
_FORMS = {form.value.lower(): form for form in Form if form.value}


def _parameters(media_range: str) -> dict[str, str]:
    parameters = {}
    for part in media_range.split(";")[1:]:
        key, _, value = part.partition("=")
        parameters[key.strip().lower()] = value.strip().strip('"')
    return parameters


def negotiate(accept: str) -> Wanted:
    """The first form of ``accept`` the sandbox can serve; 406 when it names none."""
    if not accept.strip():
        return AS_STORED
    for media_range in accept.split(","):
        parameters = _parameters(media_range)
        kind = parameters.get("as")
        if kind is None:
            return AS_STORED
        form = _FORMS.get(kind.lower())
        version = parameters.get("v", "")
        if form is not None and parameters.get("g", "") == META_GROUP and version in _META_VERSIONS:
            return Wanted(form, version)
    raise _not_acceptable(f"only the following media types are accepted: {ACCEPTED_MEDIA_TYPES}")


def not_acceptable_for_object(wanted: Wanted, kind: str) -> None:
    """Refuse a list form asked of one object."""
    if wanted.form is Form.METADATA_LIST:
        raise _not_acceptable(
            f"you requested PartialObjectMetadataList, but the requested object is not a list ({kind})"
        )


def not_acceptable_for_list(wanted: Wanted, list_kind: str) -> None:
    """Refuse a single-object form asked of a list."""
    if wanted.form is Form.METADATA:
        raise _not_acceptable(
            f"you requested PartialObjectMetadata, but the requested object is a list ({list_kind})"
        )


def _not_acceptable(message: str) -> errors.ApiError:
    return errors.ApiError(406, "NotAcceptable", message, {})


def partial_metadata(obj: JsonObj, version: str = "v1") -> JsonObj:
    return {
        "kind": Form.METADATA.value,
        "apiVersion": f"{META_GROUP}/{version}",
        "metadata": obj.get("metadata") or {},
    }


def partial_metadata_list(items: list[JsonObj], list_meta: JsonObj, version: str = "v1") -> JsonObj:
    return {
        "kind": Form.METADATA_LIST.value,
        "apiVersion": f"{META_GROUP}/{version}",
        "metadata": list_meta,
        "items": [partial_metadata(item, version) for item in items],
    }
