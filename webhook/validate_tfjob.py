"""TFJob admission validation (pure): CREATE and UPDATE checked with the ``tfjob`` rules.

Denials carry upstream's wording (``tfjob.validation.aggregate``: one error as is, several as
``[e1, e2]``) with code 403, as controller-runtime's ``Denied`` answers, so the API server prints
``admission webhook "..." denied the request: <errors>``.

Requests this endpoint does not judge are allowed, documented here: DELETE and CONNECT (nothing to
validate), another kind, and subresources such as ``tfjobs/status`` (the controller's writes).
A CREATE or UPDATE without ``object`` (or an UPDATE without ``oldObject``) is malformed: 400.
"""

from __future__ import annotations

from typing import Final, cast

from tfjob.constants import GROUP, KIND
from tfjob.validation import aggregate, validate_create, validate_update
from tfjob.wire import TFJob
from webhook.review import AdmissionRequest, Decision, Reason, allow, deny

DENIED: Final = 403


def validate_tfjob(request: AdmissionRequest) -> Decision:
    if request.kind.kind != KIND or request.kind.group not in (GROUP, "") or request.sub_resource:
        return allow(Reason.IGNORED)
    if request.operation not in ("CREATE", "UPDATE"):
        return allow(Reason.IGNORED)
    if request.object is None:
        return deny(Reason.MALFORMED, 400, f"the TFJob {request.operation} review carries no object")
    job = cast(TFJob, request.object)
    if request.operation == "CREATE":
        errors = validate_create(job)
    else:
        if request.old_object is None:
            return deny(Reason.MALFORMED, 400, "the TFJob UPDATE review carries no oldObject")
        errors = validate_update(cast(TFJob, request.old_object), job)
    if errors:
        return deny(Reason.INVALID, DENIED, aggregate(errors))
    return allow(Reason.VALID)
