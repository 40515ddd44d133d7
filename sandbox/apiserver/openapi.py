"""OpenAPI endpoints, as far as kubectl needs them.

kubectl 1.37 reads ``/openapi/v3`` to learn whether the server validates fields itself (the
``fieldValidation`` query parameter on each kind's PATCH operation, found through the
``x-kubernetes-group-version-kind`` extension). When it does, kubectl sends
``fieldValidation=Strict`` and skips client-side schema validation; it then computes apply
patches from its compiled-in types. So the per-group-version documents list paths and
operations, not schemas.
"""

from __future__ import annotations

import hashlib
import json

from aiohttp import web

from sandbox.apiserver import errors
from sandbox.apiserver.handlers import json_response
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.registry import ResourceInfo
from sandbox.apiserver.state import ApiState

_QUERY_PARAMETERS = ("dryRun", "fieldManager", "fieldValidation", "force")


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _operation(info: ResourceInfo, action: str) -> JsonObj:
    return {
        "operationId": f"{action}{info.kind}",
        "parameters": [
            {"name": name, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
            for name in _QUERY_PARAMETERS
        ],
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": info.group, "version": info.version, "kind": info.kind},
    }


def group_version_document(state: ApiState, group: str, version: str) -> JsonObj | None:
    infos = state.registry.resources_in(group, version)
    if not infos:
        return None
    paths: JsonObj = {}
    prefix = "/" + _gv_path(group, version)
    for info in infos:
        collection = (
            f"{prefix}/namespaces/{{namespace}}/{info.resource}"
            if info.namespaced
            else f"{prefix}/{info.resource}"
        )
        paths[collection] = {"post": _operation(info, "post")}
        paths[f"{collection}/{{name}}"] = {
            "get": _operation(info, "get"),
            "put": _operation(info, "put"),
            "patch": _operation(info, "patch"),
            "delete": _operation(info, "delete"),
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.37.1"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def root_document(state: ApiState) -> JsonObj:
    paths: JsonObj = {}
    for group, versions in state.registry.group_versions().items():
        for version in versions:
            document = group_version_document(state, group, version)
            digest = hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest()[:64].upper()
            key = _gv_path(group, version)
            paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return {"paths": paths}


def _protobuf_string(field: int, text: str) -> bytes:
    data = text.encode()
    return bytes([field << 3 | 2, len(data)]) + data


# An OpenAPI v2 document with no definitions, in the protobuf form kubectl asks for: kubectl falls
# back to it for client-side validation of kinds its v3 check cannot place (``kind: List``), and
# kinds without definitions pass that validation, leaving the checks to the server.
OPENAPI_V2_DOCUMENT = (
    _protobuf_string(1, "2.0")
    + bytes([2 << 3 | 2, 21])
    + _protobuf_string(1, "Kubernetes")
    + _protobuf_string(2, "v1.37.1")
)
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def add_routes(app: web.Application, state: ApiState) -> None:
    async def v3_root(_request: web.Request) -> web.StreamResponse:
        return json_response(root_document(state))

    async def v3_group_version(request: web.Request) -> web.StreamResponse:
        segments = request.match_info["tail"].split("/")
        if segments[0] == "api" and len(segments) == 2:
            document = group_version_document(state, "", segments[1])
        elif segments[0] == "apis" and len(segments) == 3:
            document = group_version_document(state, segments[1], segments[2])
        else:
            document = None
        if document is None:
            raise errors.page_not_found()
        return json_response(document)

    async def v2(request: web.Request) -> web.StreamResponse:
        if "protobuf" in request.headers.get("Accept", ""):
            return web.Response(body=OPENAPI_V2_DOCUMENT, headers={"Content-Type": OPENAPI_V2_PROTOBUF})
        return json_response(
            {
                "swagger": "2.0",
                "info": {"title": "Kubernetes", "version": "v1.37.1"},
                "paths": {},
                "definitions": {},
            }
        )

    app.router.add_get("/openapi/v2", v2)
    app.router.add_get("/openapi/v3", v3_root)
    app.router.add_get("/openapi/v3/{tail:.*}", v3_group_version)
