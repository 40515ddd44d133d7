"""Leader election on a ``coordination.k8s.io/v1`` Lease, built on ``KubeApi``.

The algorithm is client-go's: a candidate takes the Lease when it is free, released, or not renewed
for ``lease_duration`` seconds *as observed on the candidate's own monotonic clock* (so clock skew
between machines does not matter); every write is a ``replace`` carrying the resourceVersion that was
read, so two candidates can never both win the same round (one gets 409 Conflict). The leader renews
every ``retry_period``; if it cannot renew for ``renew_deadline`` it stops leading before its Lease
can expire for the others (``renew_deadline < lease_duration``), so two electors never both lead.
On cancellation a leader releases the Lease (empty holder), so a successor takes over at once
instead of waiting ``lease_duration``.

Public API:

- ``LeaseTerms(namespace, name, identity, lease_duration=15.0, renew_deadline=10.0,
  retry_period=2.0)`` -- which Lease, held as whom, with which timings; checked when made.
- ``LeaderElector(api, terms)``
  - ``async run(on_started_leading, on_stopped_leading)`` -- campaigns until elected, then runs
    ``on_started_leading()`` as a task while renewing. Returns after leadership ends: when renewal
    fails (the task is cancelled first), or when the task finishes (its exception, if any, is
    re-raised after the Lease is released). ``on_stopped_leading()`` is called whenever leadership
    that was gained ends, including on cancellation. Run it again to campaign again; most callers
    exit the process instead.
  - ``is_leader`` -- True while this elector holds the Lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kube.api import KubeApi
from kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from kube.resources import LEASES

__all__ = ["LeaderElector", "LeaseTerms"]

logger = logging.getLogger(__name__)


def _micro_time(now: datetime.datetime | None = None) -> str:
    now = now or datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaseTerms:
    """Which Lease to hold, as whom, and for how long (client-go's LeaderElectionConfig)."""

    namespace: str
    name: str
    identity: str
    # controller-runtime's defaults.
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("a leader election identity must not be empty")
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError(
                "need lease_duration > renew_deadline > retry_period > 0, got "
                f"{self.lease_duration}, {self.renew_deadline}, {self.retry_period}"
            )

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def duration_seconds(self) -> int:
        """``spec.leaseDurationSeconds``: whole seconds, at least one."""
        return max(1, round(self.lease_duration))


class LeaderElector:
    def __init__(self, api: KubeApi, terms: LeaseTerms) -> None:
        self._api = api
        self._terms = terms
        self._is_leader = False
        # What we last saw of someone else's record, and when (local monotonic clock).
        self._observed_record: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._lease: dict[str, Any] | None = None

    @property
    def is_leader(self) -> bool:
        return self._is_leader

    @property
    def identity(self) -> str:
        return self._terms.identity

    async def run(
        self,
        on_started_leading: Callable[[], Awaitable[None]],
        on_stopped_leading: Callable[[], None],
    ) -> None:
        acquired_at = await self._campaign()
        task: asyncio.Task[None] | None = None
        try:
            self._is_leader = True
            logger.info("%s became leader of lease %s", self._terms.identity, self._terms)
            task = asyncio.ensure_future(on_started_leading())
            await self._renew_until_lost(task, acquired_at)
            if task.done():
                task.result()  # re-raise the leading task's failure
        finally:
            self._is_leader = False
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            await asyncio.shield(self._release())
            logger.info("%s stopped leading lease %s", self._terms.identity, self._terms)
            try:
                on_stopped_leading()
            except Exception:
                logger.exception("on_stopped_leading failed")

    async def _campaign(self) -> float:
        """Try until the Lease is ours; return when the winning attempt started (monotonic)."""
        while True:
            started = time.monotonic()
            if await self._try_acquire_or_renew():
                return started
            # Jitter keeps a crowd of candidates from hitting the Lease in lockstep.
            await asyncio.sleep(self._terms.retry_period * random.uniform(1.0, 1.2))

    async def _renew_until_lost(self, task: asyncio.Task[None], acquired_at: float) -> None:
        # A renewal counts from the moment its request was sent: the Lease the others see can only
        # be newer than that, so stepping down renew_deadline after it is always in time.
        last_renew = acquired_at
        while not task.done():
            until_deadline = self._terms.renew_deadline - (time.monotonic() - last_renew)
            wait = max(0.0, min(self._terms.retry_period, until_deadline))
            done, _ = await asyncio.wait({task}, timeout=wait)
            if done:
                return
            attempt_started = time.monotonic()
            remaining = self._terms.renew_deadline - (attempt_started - last_renew)
            renewed = False
            if remaining > 0:
                try:
                    async with asyncio.timeout(remaining):
                        renewed = await self._try_acquire_or_renew()
                except TimeoutError:
                    renewed = False
            if renewed:
                last_renew = attempt_started
            elif time.monotonic() - last_renew >= self._terms.renew_deadline:
                logger.error("%s could not renew lease %s within %.1fs; giving up leadership",
                             self._terms.identity, self._terms, self._terms.renew_deadline)
                return

    async def _try_acquire_or_renew(self) -> bool:
        try:
            return await self._attempt()
        except Exception:
            # Whatever went wrong, this round is lost; the deadline logic decides what it means.
            logger.exception("leader election round for lease %s failed", self._terms)
            return False

    async def _attempt(self) -> bool:
        try:
            lease = await self._api.get(LEASES, self._terms.name, self._terms.namespace)
        except NotFound:
            return await self._create()
        except ApiError as exc:
            logger.warning("cannot read lease %s: %s", self._terms, exc)
            return False
        # Observed once the answer is in hand: judging expiry from a later instant is the safe side.
        now = time.monotonic()
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (
            holder, spec.get("renewTime"), spec.get("leaseTransitions"), spec.get("leaseDurationSeconds")
        )
        if record != self._observed_record:
            self._observed_record = record
            self._observed_at = now
        if holder and holder != self._terms.identity:
            duration = spec.get("leaseDurationSeconds")
            duration = float(duration) if isinstance(duration, int | float) else self._terms.lease_duration
            if now - self._observed_at < duration:
                return False
        body = dict(lease)
        body["spec"] = self._held(spec)
        return await self._write(
            "update", self._api.replace(LEASES, self._terms.name, body, self._terms.namespace), Conflict
        )

    async def _create(self) -> bool:
        body = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self._terms.name, "namespace": self._terms.namespace},
            "spec": self._held({}),
        }
        created = self._api.create(LEASES, body, self._terms.namespace)
        return await self._write("create", created, AlreadyExists)

    def _held(self, spec: dict[str, Any]) -> dict[str, Any]:
        """``spec`` (``{}``: a new Lease) renewed by this elector, and acquired if it was not ours."""
        stamp = _micro_time()
        held = dict(spec)
        if spec.get("holderIdentity") != self._terms.identity:
            held["acquireTime"] = stamp
            held["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1 if spec else 0
        held["holderIdentity"] = self._terms.identity
        held["leaseDurationSeconds"] = self._terms.duration_seconds
        held["renewTime"] = stamp
        return held

    async def _write(
        self, verb: str, request: Awaitable[dict[str, Any]], lost_race: type[ApiError]
    ) -> bool:
        """Whether the write won: another candidate's write in between is a lost round, not an error."""
        try:
            self._lease = await request
        except lost_race:
            return False
        except ApiError as exc:
            logger.warning("cannot %s lease %s: %s", verb, self._terms, exc)
            return False
        return True

    async def _release(self) -> None:
        """Hand the Lease back if we still hold it, so a successor need not wait for expiry."""
        lease = self._lease
        self._lease = None
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self._terms.identity:
            return
        body = dict(lease)
        body["spec"] = {
            **(lease.get("spec") or {}),
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "renewTime": _micro_time(),
        }
        try:
            async with asyncio.timeout(self._terms.retry_period):
                await self._api.replace(LEASES, self._terms.name, body, self._terms.namespace)
        except (ApiError, TimeoutError) as exc:
            logger.warning("could not release lease %s: %s", self._terms, exc)
