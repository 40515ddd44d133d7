"""certs room: a CA and serving certificates for the webhook, their Secret and file forms, expiry.

Pure modules (``authority``, ``serving``, ``secret``, ``files``, ``expiry``) know nothing of
Kubernetes I/O; ``keeper`` keeps a Secret and the webhook configurations' ``caBundle`` current
through ``kube.api.KubeApi``.
"""
