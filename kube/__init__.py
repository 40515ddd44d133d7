"""kube room: generic async Kubernetes machinery, with no TFJob knowledge.

Modules (each documents its public API in its docstring):

- ``resources`` -- ``Resource`` and the well-known resource types; REST paths.
- ``errors`` -- the one mapping from API failures to exceptions; ``is_retryable``.
- ``client`` -- ``make_api_client`` from a kubeconfig or the in-cluster service account, through
  kubernetes_asyncio (its config loaders, its ``ApiClient``'s one aiohttp session); ``KubeClient``.
- ``proxy`` -- the environment's proxy for the API server, as kubectl decides it (NO_PROXY CIDRs).
- ``patches`` -- ``PatchType`` (with media types) and patch-building helpers.
- ``ratelimit`` -- ``TokenBucket`` for client-side QPS/burst.
- ``api`` -- ``KubeApi``: CRUD, patch and watch over any resource, raw dicts in and out.
- ``apimetrics`` -- Prometheus request metrics as a ``KubeApi`` observer.
- ``store`` -- ``Store``: the object cache with secondary indexes.
- ``reflector`` -- ``Reflector``: list, watch, relist on 410, backoff, stall detection.
- ``workqueue`` -- ``WorkQueue``: dedup, one worker per key, retry backoff, timers.
- ``leader`` -- ``LeaderElector`` on a coordination.k8s.io Lease.
- ``events`` -- ``EventRecorder``: non-blocking, aggregating core/v1 Events.
- ``ops`` -- ``OpsServer``: /healthz, /readyz, /metrics.
- ``logs`` -- JSON logging and context fields.
- ``heap`` -- the cyclic garbage collector paused while the caches first fill.
"""
