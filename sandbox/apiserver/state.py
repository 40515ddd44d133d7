"""The server's state: what it serves, what it stores, who may call it, and its helpers."""

from __future__ import annotations

import datetime
import ipaddress
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sandbox.apiserver.admission import Admission
from sandbox.apiserver.auth import TokenAuthenticator
from sandbox.apiserver.rbac import Authorizer
from sandbox.apiserver.registry import LEASES, NODES, Registry
from sandbox.apiserver.requestlog import RequestLog
from sandbox.apiserver.storage import DEFAULT_WATCH_WINDOW, Storage

logger = logging.getLogger(__name__)


NODE_LEASE_NAMESPACE = "kube-node-lease"
# A node agent counts as running while its Node's Ready heartbeat is younger than this
# (kube-controller-manager's node-monitor-grace-period).
NODE_HEARTBEAT_GRACE = datetime.timedelta(seconds=40)
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def timestamp(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class ClusterIPAllocator:
    _used: set[str] = field(default_factory=set)
    _next: int = 1

    def allocate(self) -> str:
        hosts = SERVICE_CIDR.num_addresses - 2
        for _ in range(hosts):
            address = str(SERVICE_CIDR.network_address + self._next)
            self._next = self._next % hosts + 1
            if address not in self._used:
                self._used.add(address)
                return address
        raise RuntimeError("the service IP range is exhausted")

    def reserve(self, address: str) -> None:
        self._used.add(address)

    def release(self, address: str) -> None:
        self._used.discard(address)


@dataclass
class ApiState:
    registry: Registry
    storage: Storage
    admission: Admission
    authenticator: TokenAuthenticator
    request_log: RequestLog
    cluster_ips: ClusterIPAllocator
    clock: Callable[[], datetime.datetime] = utc_now
    bookmark_interval: float = 10.0
    authorizer: Authorizer | None = None
    """RBAC authorization when set; None lets every authenticated user do everything."""

    @classmethod
    def create(cls, watch_window: int = DEFAULT_WATCH_WINDOW) -> ApiState:
        registry = Registry.with_builtins()
        storage = Storage(watch_window)
        return cls(
            registry,
            storage,
            Admission(storage, registry),
            TokenAuthenticator(),
            RequestLog(),
            ClusterIPAllocator(),
        )

    def now(self) -> datetime.datetime:
        return self.clock()

    def _fresh(self, value: Any) -> bool:
        if not value:
            return False
        try:
            moment = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return False
        return self.now() - moment < NODE_HEARTBEAT_GRACE

    def node_agent_serves(self, node_name: str) -> bool:
        """Whether a node agent heartbeats ``node_name`` (then pod deletion waits for it).

        The heartbeat is the Node's Ready=True condition, fresh by its ``lastHeartbeatTime`` or by
        the node's Lease in ``kube-node-lease`` (``spec.renewTime``), as kube-controller-manager reads it.
        """
        if not node_name:
            return False
        node = self.storage.get(NODES, "", node_name)
        if node is None:
            return False
        ready = next(
            (c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), None
        )
        if ready is None or ready.get("status") != "True":
            return False
        lease = self.storage.get(LEASES, NODE_LEASE_NAMESPACE, node_name) or {}
        return self._fresh(ready.get("lastHeartbeatTime")) or self._fresh(
            (lease.get("spec") or {}).get("renewTime")
        )
