"""create, get, list, update and patch, in kube-apiserver's order.

Order on writes: decode -> defaulting -> mutating admission -> validation -> validating
admission -> storage, with optimistic concurrency checked against the stored resourceVersion.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sandbox.apiserver import conversion, defaults, errors, objects, shapes
from sandbox.apiserver.admission import AdmissionAttributes
from sandbox.apiserver.auth import UserInfo
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.patch import PatchType, apply_patch, decode_patch, patch_type_of
from sandbox.apiserver.registry import CRDS, NAMESPACES, SERVICE_ACCOUNTS, ResourceInfo
from sandbox.apiserver.state import ApiState, timestamp

logger = logging.getLogger(__name__)


@dataclass
class RequestContext:
    user: UserInfo
    dry_run: bool = False
    field_validation: str = "Warn"
    field_manager: str = ""
    warnings: list[str] = field(default_factory=list)


def admission_attributes(
    info: ResourceInfo,
    subresource: str,
    namespace: str,
    name: str,
    operation: str,
    ctx: RequestContext,
    options_kind: str,
) -> AdmissionAttributes:
    options: JsonObj = {"kind": options_kind, "apiVersion": "meta.k8s.io/v1"}
    if ctx.field_manager:
        options["fieldManager"] = ctx.field_manager
    if ctx.dry_run:
        options["dryRun"] = ["All"]
    return AdmissionAttributes(info, subresource, namespace, name, operation, ctx.user, ctx.dry_run, options)


def _report_unknown(unknown: list[str], ctx: RequestContext) -> None:
    if not unknown:
        return
    if ctx.field_validation == "Strict":
        text = ", ".join(f'unknown field "{path}"' for path in unknown)
        raise errors.bad_request(f"strict decoding error: {text}")
    if ctx.field_validation == "Warn":
        ctx.warnings.extend(f'unknown field "{path}"' for path in unknown)


def _check_kind(info: ResourceInfo, body: JsonObj) -> None:
    kind = body.get("kind")
    api_version = body.get("apiVersion")
    if kind and kind != info.kind:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({info.api_version})"
            if api_version != info.api_version
            else f"Object '{kind}' is not a '{info.kind}'"
        )


def _raise_invalid(info: ResourceInfo, name: str, causes: list[errors.Cause]) -> None:
    if causes:
        raise errors.invalid(info.kind, info.group, name, causes)


def _decode_storage(info: ResourceInfo, body: Any, private: bool = False) -> JsonObj:
    """The request body as a stored object; ``private`` bodies are already this request's own copy."""
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    _check_kind(info, body)
    stored = conversion.to_storage(info.group, info.resource, body if private else objects.clone(body))
    stored["apiVersion"] = info.api_version if info.storage is None else "v1"
    stored["kind"] = info.kind
    shapes.check_shape(info, stored)
    defaults.null_condition_times(info.group, info.resource, stored)
    return stored


def require_namespace(state: ApiState, info: ResourceInfo, namespace: str, creating: bool) -> None:
    if not info.namespaced:
        return
    found = state.storage.get(NAMESPACES, "", namespace)
    if found is None:
        raise errors.not_found("namespaces", "", namespace)
    if creating and (found.get("metadata") or {}).get("deletionTimestamp"):
        raise errors.forbidden(
            info.resource,
            info.group,
            "",
            f"unable to create new content in namespace {namespace} because it is being terminated",
        )


async def create(
    state: ApiState, info: ResourceInfo, namespace: str, body: Any, ctx: RequestContext
) -> JsonObj:
    obj = _decode_storage(info, body)
    meta = obj.setdefault("metadata", {})
    if info.namespaced:
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace
        require_namespace(state, info, namespace, creating=True)
    else:
        meta.pop("namespace", None)
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = objects.generated_name(str(meta["generateName"]))
    name = str(meta.get("name") or "")
    for server_field in (
        "uid",
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
        "managedFields",
    ):
        meta.pop(server_field, None)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = timestamp(state.now())
    if objects.tracks_generation(info):
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    if not name:
        # Nothing to name the object by: refuse before defaulting and admission, as kube-apiserver does.
        _raise_invalid(info, name, objects.validate(info, obj, None)[:1])
    unknown = objects.prepare_create(state, info, obj)
    _report_unknown(unknown, ctx)
    attrs = admission_attributes(
        info, "", namespace if info.namespaced else "", name, "CREATE", ctx, "CreateOptions"
    )
    mutated = await state.admission.mutate(attrs, objects.served(info, obj), None, ctx.warnings)
    if mutated is not None and mutated != objects.served(info, obj):
        obj = _decode_storage(info, mutated)
        objects.default_after_admission(state, info, obj)
    _raise_invalid(info, name, objects.validate(info, obj, None))
    await state.admission.validate(attrs, objects.served(info, obj), None, ctx.warnings)
    if state.storage.get(info.storage_key, namespace if info.namespaced else "", name) is not None:
        raise errors.already_exists(info.resource, info.group, name)
    if ctx.dry_run:
        return objects.served(info, obj)
    stored = state.storage.put(info.storage_key, obj, "ADDED")
    _after_write(state, info, stored)
    if info.storage_key == NAMESPACES:
        _add_default_service_account(state, name)
    return objects.served(info, stored)


def _add_default_service_account(state: ApiState, namespace: str) -> None:
    """What kube-controller-manager's service account controller does for every new namespace."""
    if state.storage.get(SERVICE_ACCOUNTS, namespace, "default") is not None:
        return
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": "default",
            "namespace": namespace,
            "uid": str(uuid.uuid4()),
            "creationTimestamp": timestamp(state.now()),
        },
    }
    state.storage.put(SERVICE_ACCOUNTS, account, "ADDED")


def _after_write(state: ApiState, info: ResourceInfo, obj: JsonObj) -> None:
    if info.storage_key == CRDS:
        state.registry.install_crd(obj)


def get(state: ApiState, info: ResourceInfo, namespace: str, name: str) -> JsonObj:
    found = state.storage.get(info.storage_key, namespace, name)
    if found is None:
        raise errors.not_found(info.resource, info.group, name)
    return objects.served(info, found)


@dataclass(frozen=True)
class ListResult:
    stored: list[JsonObj]
    """The objects as stored: never to be changed; ``served`` gives the client's view."""
    resource_version: str
    continue_token: str
    remaining: int | None

    def served(self, info: ResourceInfo) -> list[JsonObj]:
        return [objects.served(info, obj) for obj in self.stored]


def _encode_continue(revision: int, after: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"rv": revision, "start": after}).encode()).decode()


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    """The token's revision, and the (namespace, name) of the last object already listed."""
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, _, name = str(data["start"]).partition("/")
        return int(data["rv"]), (namespace, name)
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise errors.bad_request(f"continue key is not valid: {exc}") from exc


def list_objects(
    state: ApiState,
    info: ResourceInfo,
    namespace: str | None,
    matches: Callable[[JsonObj], bool] | None,
    limit: int,
    continue_token: str,
) -> ListResult:
    revision = state.storage.revision
    after: tuple[str, str] | None = None
    if continue_token:
        token_revision, after = _decode_continue(continue_token)
        if token_revision < state.storage.oldest_watchable:
            raise errors.gone(
                "The provided continue parameter is too old to display a consistent list result. You can "
                "start a new list without the continue parameter, or use the continue token in this "
                "response to retrieve the remainder of the results. Continuing with the provided token "
                "results in an inconsistent list - objects that were created, modified, or deleted between "
                "the time the first chunk was returned and now may show up in the list."
            )
        revision = token_revision
    stored: list[JsonObj] = []
    next_token = ""
    remaining: int | None = None
    last_position = ""
    candidates = state.storage.list_in(info.storage_key, namespace, after)
    for index, obj in enumerate(candidates):
        meta = obj.get("metadata") or {}
        position = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        if matches is not None and not matches(obj):
            continue
        if limit and len(stored) >= limit:
            next_token = _encode_continue(revision, last_position)
            remaining = len(candidates) - index if matches is None else None
            break
        stored.append(obj)
        last_position = position
    return ListResult(stored, str(state.storage.revision), next_token, remaining)


async def update(
    state: ApiState,
    info: ResourceInfo,
    namespace: str,
    name: str,
    subresource: str,
    body: Any,
    ctx: RequestContext,
    allow_create: bool = False,
    private: bool = False,
) -> tuple[JsonObj, bool]:
    """PUT; returns the object and whether it was created (only when ``allow_create``)."""
    obj = _decode_storage(info, body, private)
    meta = obj.setdefault("metadata", {})
    if meta.get("name") and meta["name"] != name:
        raise errors.bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
        )
    if info.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    existing = state.storage.get(info.storage_key, namespace, name)
    if existing is None:
        if allow_create and not subresource:
            meta["name"] = name
            return await create(state, info, namespace, obj, ctx), True
        raise errors.not_found(info.resource, info.group, name)
    based_on = str(existing["metadata"].get("resourceVersion"))
    wanted = str(meta.get("resourceVersion") or "")
    if wanted and wanted != based_on:
        raise errors.conflict(info.resource, info.group, name, errors.OBJECT_MODIFIED)
    if not wanted and info.is_custom:
        _raise_invalid(
            info,
            name,
            [
                errors.Cause(
                    "FieldValueInvalid",
                    "Invalid value: 0: must be specified for an update",
                    "metadata.resourceVersion",
                )
            ],
        )
    old = objects.clone(existing)
    unknown = objects.prepare_update(state, info, subresource, obj, existing)
    _report_unknown(unknown, ctx)
    attrs = admission_attributes(info, subresource, namespace, name, "UPDATE", ctx, "UpdateOptions")
    mutated = await state.admission.mutate(
        attrs, objects.served(info, obj), objects.served(info, old), ctx.warnings
    )
    if mutated is not None and mutated != objects.served(info, obj):
        obj = _decode_storage(info, mutated)
        objects.prepare_update(state, info, subresource, obj, existing)
    _raise_invalid(info, name, objects.validate(info, obj, old))
    await state.admission.validate(attrs, objects.served(info, obj), objects.served(info, old), ctx.warnings)
    current = state.storage.get(info.storage_key, namespace, name)
    if current is None:
        raise errors.not_found(info.resource, info.group, name)
    if str(current["metadata"].get("resourceVersion")) != based_on:
        raise errors.conflict(info.resource, info.group, name, errors.OBJECT_MODIFIED)
    if objects.comparable(obj) == objects.comparable(existing):
        return objects.served(info, existing), False
    if ctx.dry_run:
        obj["metadata"]["resourceVersion"] = based_on
        return objects.served(info, obj), False
    obj_meta = obj["metadata"]
    if (
        obj_meta.get("deletionTimestamp")
        and not obj_meta.get("finalizers")
        and not obj_meta.get("deletionGracePeriodSeconds")
    ):
        final = state.storage.remove(info.storage_key, namespace, name)
        return objects.served(info, final or obj), False
    stored = state.storage.put(info.storage_key, obj, "MODIFIED")
    _after_write(state, info, stored)
    return objects.served(info, stored), False


def _sets_resource_version(patch_type: PatchType, patch: Any) -> bool:
    if patch_type is PatchType.JSON:
        return any(
            isinstance(op, dict) and str(op.get("path", "")).startswith("/metadata/resourceVersion")
            for op in patch or []
        )
    return isinstance(patch, dict) and "resourceVersion" in (patch.get("metadata") or {})


async def patch(
    state: ApiState,
    info: ResourceInfo,
    namespace: str,
    name: str,
    subresource: str,
    content_type: str,
    body: bytes,
    ctx: RequestContext,
) -> tuple[JsonObj, bool]:
    patch_type = patch_type_of(content_type, info.is_custom)
    decoded = decode_patch(patch_type, body)
    if patch_type is PatchType.APPLY and not ctx.field_manager:
        raise errors.bad_request(
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
            "for apply patch"
        )
    retry = not _sets_resource_version(patch_type, decoded)
    for attempt in range(5):
        existing = state.storage.get(info.storage_key, namespace, name)
        if existing is None:
            if patch_type is PatchType.APPLY and not subresource and isinstance(decoded, dict):
                created = dict(decoded)
                created.setdefault("metadata", {})["name"] = name
                return await create(state, info, namespace, created, ctx), True
            raise errors.not_found(info.resource, info.group, name)
        current = objects.served(info, objects.clone(existing))
        effective = (
            PatchType.STRATEGIC if patch_type is PatchType.APPLY and not info.is_custom else patch_type
        )
        if effective is PatchType.APPLY:
            effective = PatchType.MERGE
        patched = apply_patch(effective, current, decoded)
        patched.setdefault("metadata", {})
        if patched["metadata"].get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({patched['metadata'].get('name')}) does not match the name "
                f"on the URL ({name})"
            )
        if not patched["metadata"].get("resourceVersion") and not _sets_resource_version(patch_type, decoded):
            patched["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
        try:
            result, _created = await update(
                state, info, namespace, name, subresource, patched, ctx, private=True
            )
            return result, False
        except errors.ApiError as error:
            if error.reason == "Conflict" and retry and attempt < 4:
                continue
            raise
    raise errors.conflict(info.resource, info.group, name, errors.OBJECT_MODIFIED)
