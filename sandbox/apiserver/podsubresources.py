"""The pod subresources kube-apiserver serves itself: ``binding`` and ``log`` (proxied to the node agent)."""

from __future__ import annotations

import json
import logging
from typing import Any

import aiohttp
from aiohttp import web

from sandbox.apiserver import errors
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.registry import NODES, PODS
from sandbox.apiserver.state import ApiState, timestamp

logger = logging.getLogger(__name__)


LOG_OPTIONS = ("follow", "tailLines", "previous", "timestamps", "sinceSeconds", "limitBytes")


def bind_pod(state: ApiState, namespace: str, name: str, body: Any, dry_run: bool) -> JsonObj:
    """POST pods/<name>/binding: set spec.nodeName once and mark the pod scheduled."""
    target = (body if isinstance(body, dict) else {}).get("target") or {}
    node_name = str(target.get("name", ""))
    if not node_name:
        raise errors.bad_request("target.name: Required value")
    pod = state.storage.get(PODS, namespace, name)
    if pod is None:
        raise errors.not_found("pods", "", name)
    if pod["metadata"].get("deletionTimestamp"):
        raise errors.conflict(
            "pods/binding", "", name, f"pod {name} is being deleted, cannot be assigned to a host"
        )
    current = (pod.get("spec") or {}).get("nodeName")
    if current:
        raise errors.conflict("pods/binding", "", name, f'pod {name} is already assigned to node "{current}"')
    if dry_run:
        return errors.success_body()
    bound = json.loads(json.dumps(pod))
    bound["spec"]["nodeName"] = node_name
    status = bound.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": timestamp(state.now()),
        }
    )
    status["conditions"] = conditions
    state.storage.put(PODS, bound, "MODIFIED")
    return errors.success_body()


async def pod_log(state: ApiState, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
    """GET pods/<name>/log, streamed from the node agent serving the pod's node."""
    pod = state.storage.get(PODS, namespace, name)
    if pod is None:
        raise errors.not_found("pods", "", name)
    spec = pod.get("spec") or {}
    containers = [c.get("name") for c in spec.get("containers") or []]
    container = request.query.get("container") or (containers[0] if len(containers) == 1 else "")
    if not container:
        raise errors.bad_request(
            f"a container name must be specified for pod {name}, choose one of: "
            f"[{' '.join(str(c) for c in containers)}]"
        )
    if container not in containers and container not in [
        c.get("name") for c in spec.get("initContainers") or []
    ]:
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    node_name = spec.get("nodeName")
    if not node_name:
        # kube-apiserver has no kubelet to ask for a pod not yet scheduled: an empty log.
        return web.Response(body=b"", content_type="text/plain")
    node = state.storage.get(NODES, "", str(node_name))
    if node is None:
        raise errors.not_found("nodes", "", str(node_name))
    endpoints = (node.get("status") or {}).get("daemonEndpoints") or {}
    port = (endpoints.get("kubeletEndpoint") or {}).get("Port")
    if not port:
        raise errors.internal_error(f'no kubelet endpoint is known for node "{node_name}"')
    query = {k: v for k, v in request.query.items() if k in LOG_OPTIONS}
    url = f"http://127.0.0.1:{port}/containerLogs/{namespace}/{name}/{container}"
    response = web.StreamResponse(status=200)
    response.content_type = "text/plain"
    try:
        async with aiohttp.ClientSession() as session, session.get(url, params=query) as upstream:
            if upstream.status != 200:
                text = (await upstream.text()).strip()
                raise errors.bad_request(text or f"the node agent answered {upstream.status}")
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
    except aiohttp.ClientConnectorError as exc:
        # kube-apiserver passes the failed kubelet call on as a reason-less 500 Status.
        raise errors.ApiError(
            500,
            "",
            f'Get "https://127.0.0.1:{port}/containerLogs/{namespace}/{name}/{container}": '
            f"dial tcp 127.0.0.1:{port}: connect: connection refused",
        ) from exc
    return response
