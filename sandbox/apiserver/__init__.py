"""The sandbox Kubernetes API server: an aiohttp server speaking the Kubernetes REST API."""

from sandbox.apiserver.server import ApiServer

__all__ = ["ApiServer"]
