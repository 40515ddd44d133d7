"""kube-apiserver's defaulting of built-in kinds, applied before admission as the real server does.

Besides the v1 API defaults this covers what kube-apiserver's default admission plugins add to
pods before any webhook sees them: the service account name, the two default tolerations
(DefaultTolerationSeconds) and the resolved priority (Priority plugin).
"""

from __future__ import annotations

from sandbox.apiserver.jsonobj import JsonObj

DEFAULT_TOLERATIONS: tuple[JsonObj, ...] = (
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
)


def image_pull_policy(image: str) -> str:
    """Always for ``:latest`` or an untagged image (without a digest), IfNotPresent otherwise."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    if ":" not in last or last.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def _default_probe(probe: JsonObj | None) -> None:
    if probe is None:
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)


def _default_container(container: JsonObj) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    if "imagePullPolicy" not in container:
        container["imagePullPolicy"] = image_pull_policy(str(container.get("image", "")))
    resources = container.setdefault("resources", {})
    limits = resources.get("limits") or {}
    if limits:
        requests = resources.setdefault("requests", {})
        for name, quantity in limits.items():
            requests.setdefault(name, quantity)
    for port in container.get("ports") or []:
        port.setdefault("protocol", "TCP")
    for env in container.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef")
        if field_ref is not None:
            field_ref.setdefault("apiVersion", "v1")
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(container.get(probe_name))


def _default_volume(volume: JsonObj) -> None:
    for source in ("configMap", "secret"):
        if source in volume and isinstance(volume[source], dict):
            volume[source].setdefault("defaultMode", 420)


def default_pod_spec(spec: JsonObj) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            _default_container(container)
    for volume in spec.get("volumes") or []:
        _default_volume(volume)


def qos_class(spec: JsonObj) -> str:
    containers = list(spec.get("containers") or [])
    requests_seen = limits_seen = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        if requests or limits:
            requests_seen = requests_seen or bool(requests)
            limits_seen = limits_seen or bool(limits)
        for name in ("cpu", "memory"):
            if name not in limits or str(requests.get(name, limits.get(name))) != str(limits[name]):
                guaranteed = False
    if not requests_seen and not limits_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed and containers else "Burstable"


def default_pod(pod: JsonObj, priority: int, preemption_policy: str) -> None:
    """Defaults for a pod being created; ``priority`` comes from its PriorityClass (0 without one)."""
    spec = pod.setdefault("spec", {})
    default_pod_spec(spec)
    spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    tolerations = spec.setdefault("tolerations", [])
    present = {(t.get("key"), t.get("effect")) for t in tolerations}
    for toleration in DEFAULT_TOLERATIONS:
        if (toleration["key"], toleration["effect"]) not in present:
            tolerations.append(dict(toleration))
    spec["priority"] = priority
    spec.setdefault("preemptionPolicy", preemption_policy)
    pod["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}


def default_service(service: JsonObj) -> None:
    spec = service.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        if "targetPort" not in port and "port" in port:
            port["targetPort"] = port["port"]
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    service.setdefault("status", {"loadBalancer": {}})


def default_namespace(namespace: JsonObj) -> None:
    meta = namespace.setdefault("metadata", {})
    labels = meta.setdefault("labels", {})
    labels["kubernetes.io/metadata.name"] = meta.get("name", "")
    namespace.setdefault("spec", {"finalizers": ["kubernetes"]})
    namespace["status"] = {"phase": "Active"}


def _default_webhook(webhook: JsonObj, mutating: bool) -> None:
    webhook.setdefault("failurePolicy", "Fail")
    webhook.setdefault("matchPolicy", "Equivalent")
    webhook.setdefault("namespaceSelector", {})
    webhook.setdefault("objectSelector", {})
    webhook.setdefault("timeoutSeconds", 10)
    if mutating:
        webhook.setdefault("reinvocationPolicy", "Never")
    service = (webhook.get("clientConfig") or {}).get("service")
    if isinstance(service, dict):
        service.setdefault("port", 443)
    for rule in webhook.get("rules") or []:
        rule.setdefault("scope", "*")


def default_webhook_configuration(configuration: JsonObj, mutating: bool) -> None:
    for webhook in configuration.get("webhooks") or []:
        _default_webhook(webhook, mutating)


def default_crd(crd: JsonObj) -> None:
    spec = crd.setdefault("spec", {})
    spec.setdefault("conversion", {"strategy": "None"})
    names = spec.setdefault("names", {})
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")


def default_priority_class(priority_class: JsonObj) -> None:
    priority_class.setdefault("preemptionPolicy", "PreemptLowerPriority")


def default_deployment(deployment: JsonObj) -> None:
    spec = deployment.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    spec.setdefault(
        "strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    )
    default_pod_spec(spec.setdefault("template", {}).setdefault("spec", {}))


# Condition timestamps are metav1.Time structs in kube-apiserver's Go types, which ``omitempty``
# never omits: a condition written without them is stored and served with them as null.
_CONDITION_TIMES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "pods"): ("lastProbeTime", "lastTransitionTime"),
    ("", "nodes"): ("lastHeartbeatTime", "lastTransitionTime"),
}


def null_condition_times(group: str, resource: str, obj: JsonObj) -> None:
    """The null timestamps a Go round trip gives the status conditions of pods and nodes."""
    fields = _CONDITION_TIMES.get((group, resource))
    status = obj.get("status")
    if not fields or not isinstance(status, dict) or not isinstance(status.get("conditions"), list):
        return
    for condition in status["conditions"]:
        if isinstance(condition, dict):
            for name in fields:
                condition.setdefault(name, None)
