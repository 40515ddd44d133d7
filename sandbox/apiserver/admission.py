"""Dynamic admission: the registered mutating webhooks, then the validating ones, over HTTPS.

Matching (rules, scope, namespaceSelector, objectSelector, matchPolicy), failurePolicy,
timeoutSeconds, sideEffects with dry-run, reinvocationPolicy IfNeeded and JSON patch responses
follow kube-apiserver, and so do its error words.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import json
import logging
import ssl
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import aiohttp
import jsonpatch

from sandbox.apiserver import errors
from sandbox.apiserver.auth import UserInfo
from sandbox.apiserver.jsonobj import JsonObj
from sandbox.apiserver.registry import (
    MUTATING_WEBHOOKS,
    NAMESPACES,
    VALIDATING_WEBHOOKS,
    Registry,
    ResourceInfo,
    StorageKey,
)
from sandbox.apiserver.selectors import match_label_selector_object
from sandbox.apiserver.storage import Storage

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AdmissionAttributes:
    info: ResourceInfo
    subresource: str
    namespace: str
    name: str
    operation: str
    user: UserInfo
    dry_run: bool
    options: JsonObj | None


@dataclass(frozen=True)
class ServiceRoute:
    """Where a webhook's ``clientConfig.service`` is reachable from the sandbox (no cluster network)."""

    host: str
    port: int


class WebhookCallError(Exception):
    pass


def denial(webhook_name: str, status: JsonObj) -> errors.ApiError:
    """kube-apiserver's rejection: the webhook's code (at least 400), reason and details, words prefixed."""
    denied_by = f'admission webhook "{webhook_name}" denied the request'
    message, reason = str(status.get("message") or ""), str(status.get("reason") or "")
    if message:
        text = f"{denied_by}: {message}"
    elif reason:
        text = f"{denied_by}: {reason}"
    else:
        text = f"{denied_by} without explanation"
    code = int(status.get("code") or 0)
    return errors.ApiError(code if code >= 400 else 400, reason, text, status.get("details"))


def _rule_matches(rule: JsonObj, attrs: AdmissionAttributes, group: str, version: str) -> bool:
    operations = rule.get("operations") or []
    if "*" not in operations and attrs.operation not in operations:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and group not in groups:
        return False
    versions = rule.get("apiVersions") or []
    if "*" not in versions and version not in versions:
        return False
    scope = rule.get("scope", "*")
    if scope == "Namespaced" and not attrs.info.namespaced:
        return False
    if scope == "Cluster" and attrs.info.namespaced:
        return False
    resource, sub = attrs.info.resource, attrs.subresource
    for pattern in rule.get("resources") or []:
        wanted_resource, _, wanted_sub = str(pattern).partition("/")
        if wanted_resource not in ("*", resource):
            continue
        if "/" not in str(pattern):
            if not sub:
                return True
        elif wanted_sub == "*" or wanted_sub == sub:
            return True
    return False


@dataclass
class Admission:
    storage: Storage
    registry: Registry
    service_routes: dict[tuple[str, str], ServiceRoute] = field(default_factory=dict)
    on_call: list[Callable[[str, JsonObj], None]] = field(default_factory=list)
    _session: aiohttp.ClientSession | None = None
    _contexts: dict[str, ssl.SSLContext] = field(default_factory=dict)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True))
        return self._session

    def _ssl_context(self, ca_bundle: str) -> ssl.SSLContext:
        digest = hashlib.sha256(ca_bundle.encode()).hexdigest()
        context = self._contexts.get(digest)
        if context is None:
            context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
            if ca_bundle:
                try:
                    context.load_verify_locations(cadata=base64.b64decode(ca_bundle).decode())
                except (ValueError, ssl.SSLError) as exc:
                    logger.warning("invalid caBundle: %s", exc)
            self._contexts[digest] = context
        return context

    # --- matching --------------------------------------------------------------------------------
    def _matching(
        self, key: StorageKey, attrs: AdmissionAttributes, obj: JsonObj | None, old: JsonObj | None
    ) -> list[tuple[JsonObj, str]]:
        matched: list[tuple[JsonObj, str]] = []
        for configuration in self.storage.list_in(key, None):
            configuration_name = str(configuration["metadata"]["name"])
            for webhook in configuration.get("webhooks") or []:
                if self._webhook_matches(webhook, attrs, obj, old):
                    matched.append((webhook, configuration_name))
        return matched

    def _webhook_matches(
        self, webhook: JsonObj, attrs: AdmissionAttributes, obj: JsonObj | None, old: JsonObj | None
    ) -> bool:
        rules = webhook.get("rules") or []
        candidates = [(attrs.info.group, attrs.info.version)]
        if webhook.get("matchPolicy", "Equivalent") == "Equivalent":
            candidates += [(i.group, i.version) for i in self.registry.for_storage(attrs.info.storage_key)]
            preferred = self.registry.preferred(attrs.info.storage_key)
            if preferred is not None:
                candidates.append((preferred.group, preferred.version))
        if not any(_rule_matches(rule, attrs, g, v) for rule in rules for g, v in candidates):
            return False
        namespace_selector = webhook.get("namespaceSelector") or {}
        if namespace_selector:
            if attrs.info.namespaced:
                namespace = self.storage.get(NAMESPACES, "", attrs.namespace) or {}
                labels = (namespace.get("metadata") or {}).get("labels") or {}
                if not match_label_selector_object(namespace_selector, labels):
                    return False
            elif attrs.info.resource == "namespaces":
                labels = ((obj or old or {}).get("metadata") or {}).get("labels") or {}
                if not match_label_selector_object(namespace_selector, labels):
                    return False
        object_selector = webhook.get("objectSelector") or {}
        if object_selector:
            candidates_labels = [((o.get("metadata") or {}).get("labels") or {}) for o in (obj, old) if o]
            if not any(match_label_selector_object(object_selector, labels) for labels in candidates_labels):
                return False
        return True

    # --- calling ---------------------------------------------------------------------------------
    def _review(self, attrs: AdmissionAttributes, obj: JsonObj | None, old: JsonObj | None) -> JsonObj:
        info = attrs.info
        kind = {"group": info.group, "version": info.version, "kind": info.kind}
        resource = {"group": info.group, "version": info.version, "resource": info.resource}
        request: JsonObj = {
            "uid": str(uuid.uuid4()),
            "kind": kind,
            "resource": resource,
            "requestKind": kind,
            "requestResource": resource,
            "name": attrs.name,
            "namespace": attrs.namespace,
            "operation": attrs.operation,
            "userInfo": attrs.user.wire(),
            "object": obj,
            "oldObject": old,
            "dryRun": attrs.dry_run,
            "options": attrs.options,
        }
        if attrs.subresource:
            request["subResource"] = attrs.subresource
            request["requestSubResource"] = attrs.subresource
        if not attrs.namespace:
            del request["namespace"]
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}

    def _url(self, client_config: JsonObj, timeout: int) -> tuple[str, str | None]:
        service = client_config.get("service")
        if service:
            namespace, name = str(service.get("namespace", "")), str(service.get("name", ""))
            port = int(service.get("port", 443))
            route = self.service_routes.get((namespace, name))
            host, real_port = (route.host, route.port) if route else (f"{name}.{namespace}.svc", port)
            path = service.get("path") or "/"
            return f"https://{host}:{real_port}{path}?timeout={timeout}s", f"{name}.{namespace}.svc"
        url = str(client_config.get("url", ""))
        separator = "&" if "?" in url else "?"
        return f"{url}{separator}timeout={timeout}s", None

    async def _call(self, webhook: JsonObj, review: JsonObj) -> JsonObj:
        timeout = int(webhook.get("timeoutSeconds", 10))
        client_config = webhook.get("clientConfig") or {}
        url, server_hostname = self._url(client_config, timeout)
        context = self._ssl_context(str(client_config.get("caBundle", "")))
        display = (
            url if server_hostname is None else url.replace(urlsplit(url).netloc, server_hostname + ":443")
        )
        try:
            async with asyncio.timeout(timeout):
                response = await self._client().post(
                    url,
                    json=review,
                    ssl=context,
                    server_hostname=server_hostname,
                    headers={"Accept": "application/json", "Content-Type": "application/json"},
                )
                async with response:
                    text = await response.text()
        except TimeoutError as exc:
            raise WebhookCallError(
                f'failed to call webhook: Post "{display}": context deadline exceeded'
            ) from exc
        except aiohttp.ClientConnectorCertificateError as exc:
            raise WebhookCallError(
                f'failed to call webhook: Post "{display}": tls: failed to verify certificate: '
                f"{exc.certificate_error}"
            ) from exc
        except aiohttp.ClientConnectorError as exc:
            raise WebhookCallError(
                f'failed to call webhook: Post "{display}": dial tcp {exc.host}:{exc.port}: '
                "connect: connection refused"
            ) from exc
        except aiohttp.ClientError as exc:
            raise WebhookCallError(f'failed to call webhook: Post "{display}": {exc}') from exc
        if response.status >= 300:
            raise WebhookCallError(
                f'failed to call webhook: an error on the server ("{text.strip()}") has prevented the '
                "request "
                "from succeeding"
            )
        try:
            answer = json.loads(text)
        except ValueError as exc:
            raise WebhookCallError(f"received invalid webhook response: {exc}") from exc
        result = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(result, dict):
            raise WebhookCallError("received invalid webhook response: response is missing")
        expected_uid = review["request"]["uid"]
        if result.get("uid") != expected_uid:
            raise WebhookCallError(
                f'received invalid webhook response: expected response.uid="{expected_uid}", '
                f'got "{result.get("uid", "")}"'
            )
        return result

    async def _run(
        self,
        webhook: JsonObj,
        attrs: AdmissionAttributes,
        obj: JsonObj | None,
        old: JsonObj | None,
        mutating: bool,
        warnings: list[str],
    ) -> JsonObj | None:
        """Call one webhook; return the (possibly patched) object, or raise the admission error."""
        name = str(webhook.get("name", ""))
        if attrs.dry_run and webhook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise errors.bad_request(f'admission webhook "{name}" does not support dry run')
        review = self._review(attrs, obj, old)
        for listener in self.on_call:
            listener(name, review)
        try:
            result = await self._call(webhook, review)
        except WebhookCallError as exc:
            if webhook.get("failurePolicy", "Fail") == "Ignore":
                logger.warning('failed calling webhook "%s": %s (failurePolicy Ignore)', name, exc)
                return obj
            raise errors.internal_error(f'failed calling webhook "{name}": {exc}') from exc
        warnings.extend(str(w) for w in result.get("warnings") or [])
        if not result.get("allowed"):
            raise denial(name, result.get("status") or {})
        if mutating and result.get("patch") and obj is not None:
            if result.get("patchType", "JSONPatch") != "JSONPatch":
                raise errors.internal_error(
                    f'failed calling webhook "{name}": unsupported patch type "{result.get("patchType")}"'
                )
            try:
                operations = json.loads(base64.b64decode(result["patch"]))
                patched = jsonpatch.apply_patch(obj, operations)
            except (ValueError, jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                raise errors.internal_error(
                    f'failed calling webhook "{name}": JSON patch error: {exc}'
                ) from exc
            if not isinstance(patched, dict):
                raise errors.internal_error(
                    f'failed calling webhook "{name}": the patch did not produce an object'
                )
            return patched
        return obj

    async def mutate(
        self, attrs: AdmissionAttributes, obj: JsonObj | None, old: JsonObj | None, warnings: list[str]
    ) -> JsonObj | None:
        matched = self._matching(MUTATING_WEBHOOKS, attrs, obj, old)
        if not matched:
            return obj
        current = obj
        changed_after: dict[int, bool] = {}
        for index, (webhook, _configuration) in enumerate(matched):
            before = copy.deepcopy(current)
            current = await self._run(webhook, attrs, current, old, True, warnings)
            if current != before:
                for earlier in range(index):
                    changed_after[earlier] = True
        for index, (webhook, _configuration) in enumerate(matched):
            if webhook.get("reinvocationPolicy") == "IfNeeded" and changed_after.get(index):
                current = await self._run(webhook, attrs, current, old, True, warnings)
        return current

    async def validate(
        self, attrs: AdmissionAttributes, obj: JsonObj | None, old: JsonObj | None, warnings: list[str]
    ) -> None:
        matched = self._matching(VALIDATING_WEBHOOKS, attrs, obj, old)
        if matched:
            await asyncio.gather(
                *(self._run(webhook, attrs, obj, old, False, warnings) for webhook, _configuration in matched)
            )
