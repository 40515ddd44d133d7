"""The sandbox Kubernetes API server: an aiohttp HTTPS server speaking the Kubernetes REST API.

It behaves like kube-apiserver for what tfgang, kubectl 1.37 and kubernetes_asyncio do:

- discovery (legacy and aggregated), ``/version``, ``/openapi/v3`` (paths only, enough for
  kubectl's server-side field validation), bearer-token authentication (401 for unknown tokens);
- built-in kinds (namespaces, nodes, pods with status/binding/log, services with ClusterIP
  allocation, events in core/v1 and events.k8s.io/v1, secrets, configmaps, serviceaccounts,
  deployments, leases, priorityclasses, webhook configurations, CRDs, RBAC kinds stored but not
  enforced) and every CRD's resources once created;
- object semantics: uid, creationTimestamp, generation, one global resourceVersion, generateName,
  optimistic concurrency, kube-apiserver's defaulting before admission, structural-schema
  pruning, null dropping, defaulting and validation with field causes (``kube.schema``, the check
  ``kubectl tfjob explain`` runs too), the ``self == oldSelf`` CEL rule, status
  subresources, finalizers, graceful pod deletion confirmed by the node agent, ownerReference
  garbage collection (Background, Foreground, Orphan), label and field selectors, ``dryRun=All``;
- JSON, merge and strategic merge patches (415 as kube-apiserver words it), list with ``limit``
  and ``continue``, watches with bookmarks, ``timeoutSeconds``, ``sendInitialEvents`` and 410 Gone
  once a version left the history window;
- mutating then validating admission webhooks over HTTPS, with kube-apiserver's matching,
  failure policies, timeouts, reinvocation and error words;
- server-side tables for ``kubectl get`` (the pod printer's STATUS/READY/RESTARTS rules, CRD
  printer columns with priorities);
- a request log of every API call (``sandbox.testing`` and ``GET /sandbox/requests``), with the
  form of the answer each asked for (``representation``).

Not served: exec/attach/port-forward, the metrics API, authorization (every user may do
everything), CEL rules other than ``self == oldSelf``, webhook ``matchConditions``, managed fields
(server-side apply is an approximation: it merges the applied configuration), and protobuf bodies
except for Namespace, ConfigMap, Secret and ServiceAccount.

Tests start one with ``sandbox.testing.start_apiserver()``; ``tfgang-sandbox up`` runs one in the
foreground.
"""

from sandbox.apiserver.server import ApiServer

__all__ = ["ApiServer"]
