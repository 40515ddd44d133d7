# syntax=docker/dockerfile:1
# The one tfgang image: every component (tfgang-webhook, tfgang-controller, tfgang-certs) is a
# console script of the same wheel; the Helm chart picks one with the container's `command`.
#
#   docker build -t tfgang:0.1.0 .
#
# Stage 1 builds the tfgang wheel and the wheels of its dependencies; stage 2 installs them from
# that local wheelhouse only, so the runtime image has no compiler, build tools or sources.
# Only the operator's rooms are copied: the sandbox (a development tool, `sandbox/pyproject.toml`) and
# its dependencies stay out of the image.

FROM python:3.11.14-slim-bookworm AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kubeobjects/ kubeobjects/
COPY tfjob/ tfjob/
COPY kube/ kube/
COPY certs/ certs/
COPY webhook/ webhook/
COPY controller/ controller/
COPY kubectl_tfjob/ kubectl_tfjob/
RUN python -m pip wheel --wheel-dir /wheels .

FROM python:3.11.14-slim-bookworm AS runtime
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    python -m pip install --no-index --find-links=/wheels tfgang
# A numeric non-root user, so Kubernetes can verify runAsNonRoot without resolving names.
USER 65532:65532
WORKDIR /tmp
EXPOSE 9443 8081 8082
# No shell wrapper: the chart sets `command` to the component's console script.
CMD ["tfgang-controller"]
